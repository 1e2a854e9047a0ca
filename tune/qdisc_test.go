package tune

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"linerate/internal/usage"
)

// rootQdisc is a's root qdisc as `ip netns exec NS tc -j` shows it, its
// handle left out (a qdisc put back gets a new one).
func (l *lab) rootQdisc(t *testing.T) string {
	t.Helper()
	var qs []map[string]any
	if err := json.Unmarshal([]byte(l.sh(t, "tc", "-j", "qdisc", "show", "dev", "a", "root")), &qs); err != nil || len(qs) != 1 {
		t.Fatalf("tc -j qdisc show dev a root: %v %v", qs, err)
	}
	q := qs[0]
	if q["handle"] != "0:" {
		delete(q, "handle")
	}
	delete(q, "refcnt")
	b, _ := json.Marshal(q)
	return string(b)
}

func hostQdiscs(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("tc", "-j", "qdisc", "show").Output()
	if err != nil {
		t.Fatalf("tc on the host: %v", err)
	}
	return string(out)
}

// applyOne applies one item in a transaction and returns its record's
// store.
func applyOne(t *testing.T, sys System, it Item) (Store, error) {
	t.Helper()
	p, err := NewPlan(sys, []Item{it})
	if err != nil {
		return Store{}, err
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	return store, tx.Apply(context.Background())
}

func rollbackAll(t *testing.T, sys System, store Store) {
	t.Helper()
	recs, err := store.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("journal: %d records, %v", len(recs), err)
	}
	if _, err := store.Rollback(context.Background(), sys, recs[0]); err != nil {
		t.Fatal(err)
	}
}

// A root qdisc replaced through tc in the namespace, read back with tc run
// by `ip netns exec`, and put back: the kernel's default (veth: noqueue),
// or one set by hand before, with its options.
func TestNetnsQdisc(t *testing.T) {
	l := newLab(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("tc is not installed")
	}
	host := hostQdiscs(t)
	sys := openNetns(t, l.ns.Name)
	for _, tc := range []struct {
		name, byHand, value, kind string
	}{
		{"fq_codel on the default", "", "fq_codel", "fq_codel"},
		{"pfifo on the default", "", "pfifo,limit=500", "pfifo"},
		{"bfifo on one set by hand", "pfifo limit 321", "bfifo,limit=100000", "bfifo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.byHand != "" {
				l.sh(t, append([]string{"tc", "qdisc", "replace", "dev", "a", "root"}, strings.Fields(tc.byHand)...)...)
				defer l.sh(t, "sh", "-c", "tc qdisc del dev a root || true")
			}
			before := l.rootQdisc(t)
			store, err := applyOne(t, sys, Item{Kind: "qdisc", Target: "a", Value: tc.value})
			// tc's own "Specified qdisc kind is unknown": this kernel lacks
			// the qdisc; never tune's unknown kind, a missing builder.
			if err != nil && !errors.Is(err, ErrUnknownKind) && strings.Contains(err.Error(), "qdisc kind is unknown") {
				t.Skipf("this kernel has no %s: %v", tc.kind, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			after := l.rootQdisc(t)
			if !strings.Contains(after, `"kind":"`+tc.kind+`"`) {
				t.Errorf("after apply: %s, want %s", after, tc.kind)
			}
			recs, _ := store.List()
			for _, st := range Check(sys, recs[0]) {
				if !st.Holds {
					t.Errorf("status: %s %s live %q, want %q (%s)", st.Kind, st.Target, st.Live, st.To, st.Err)
				}
			}
			rollbackAll(t, sys, store)
			if got := l.rootQdisc(t); got != before {
				t.Errorf("after rollback: %s, want %s", got, before)
			}
		})
	}
	if got := hostQdiscs(t); got != host {
		t.Errorf("the host's qdiscs changed:\n%s\nwere\n%s", got, host)
	}
}

// A root tune cannot put back exactly is refused before anything changes.
func TestNetnsQdiscRefusesWhatItCannotRestore(t *testing.T) {
	l := newLab(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("tc is not installed")
	}
	l.sh(t, "tc", "qdisc", "replace", "dev", "a", "root", "handle", "1:", "htb")
	sys := openNetns(t, l.ns.Name)
	_, err := NewPlan(sys, []Item{{Kind: "qdisc", Target: "a", Value: "pfifo"}})
	if err == nil || !strings.Contains(err.Error(), "htb") {
		t.Fatalf("plan over htb: %v, want a refusal naming htb", err)
	}
}

// Killed between the journal and the change's record: the journal says it
// may have happened, and a rollback from it puts the default back.
func TestNetnsQdiscKilledMidApplyRollsBack(t *testing.T) {
	l := newLab(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("tc is not installed")
	}
	before := l.rootQdisc(t)
	state := t.TempDir()
	runKilled(t, childEnv+"_NETNS="+l.ns.Name, childEnv+"_STATE="+state,
		childEnv+"_ITEMS=qdisc:a=pfifo,limit=500", childEnv+"_KILL=1")
	if got := l.rootQdisc(t); !strings.Contains(got, `"kind":"pfifo"`) {
		t.Fatalf("the killed child left %s, want pfifo", got)
	}
	store := NewStore(state)
	recs, err := store.List()
	if err != nil || len(recs) != 1 || recs[0].Entries[0].State != Changing {
		t.Fatalf("journal after kill: %+v, %v", recs, err)
	}
	rollbackAll(t, openNetns(t, l.ns.Name), store)
	if got := l.rootQdisc(t); got != before {
		t.Errorf("after kill and rollback: %s, want %s", got, before)
	}
}

func TestQdiscValues(t *testing.T) {
	for _, c := range []struct{ qs, want string }{
		{`[{"kind":"noqueue","handle":"0:","root":true,"options":{}}]`, "default"},
		{`[{"kind":"mq","handle":"0:","root":true,"options":{}},{"kind":"pfifo_fast","handle":"0:","parent":":1","options":{}},{"kind":"ingress","handle":"ffff:","parent":"ffff:fff1","options":{}}]`, "default"},
		{`[{"kind":"pfifo","handle":"8002:","root":true,"options":{"limit":321}}]`, "pfifo,limit=321"},
		// the kernel keeps CoDel's times in 1024 ns units and shows 5 ms as 4999 us
		{`[{"kind":"fq_codel","handle":"8001:","root":true,"options":{"limit":10240,"flows":1024,"quantum":1514,"target":4999,"interval":99999,"memory_limit":33554432,"ecn":true,"drop_batch":64}}]`,
			"fq_codel,drop_batch=64,ecn,flows=1024,interval=100000us,limit=10240,memory_limit=33554432,quantum=1514,target=5000us"},
		{`[{"kind":"htb","handle":"1:","root":true,"options":{}}]`, "error"},
		{`[{"kind":"mq","handle":"0:","root":true,"options":{}},{"kind":"fq_codel","handle":"8001:","parent":":1","options":{}}]`, "error"},
	} {
		var qs []tcQdisc
		if err := json.Unmarshal([]byte(c.qs), &qs); err != nil {
			t.Fatal(err)
		}
		got, err := qdiscValue(qs, "eth0")
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("%s: %q (%v), want %q", c.qs, got, err, c.want)
		}
	}
	// 1024 ns units: t units show as floor(t·1024/1000) us; that plus one
	// sets t again (tc's us · 1000 >> 10).
	for u := uint64(1); u < 200000; u += 7 {
		shown := u * 1024 / 1000
		set, _ := strings.CutSuffix(codelMicros(shown), "us")
		var us uint64
		if err := json.Unmarshal([]byte(set), &us); err != nil || us*1000>>10 != u {
			t.Fatalf("%d units shown as %d us: %s us sets %d units", u, shown, set, us*1000>>10)
		}
	}
}

// plan asks the kernel whether it takes the qdisc, options and all,
// before anything changes: a kind this kernel lacks (this machine's has
// no fq_codel, cake or fq) or an option tc cannot parse is refused in
// plan (exit 2), where apply used to fail. Whether the kernel has a kind
// is checked independently with tc on the namespace's own macvlan.
func TestQdiscCheckedInPlan(t *testing.T) {
	l := newLab(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("tc is not installed")
	}
	sys := openNetns(t, l.ns.Name)
	before := l.rootQdisc(t)
	for _, value := range []string{"fq_codel", "cake,bandwidth=100mbit", "pfifo,limit=500", "pfifo,limit=many", "fq_codel,target=soon"} {
		kind, opts, err := parseQdiscValue(value)
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"netns", "exec", l.ns.Name, "tc", "qdisc", "replace", "dev", "m0", "root"}, tcArgs(kind, opts)...)
		out, terr := exec.Command("ip", args...).CombinedOutput()
		exec.Command("ip", "netns", "exec", l.ns.Name, "tc", "qdisc", "del", "dev", "m0", "root").Run()
		_, err = NewPlan(sys, []Item{{Kind: "qdisc", Target: "a", Value: value}})
		t.Logf("%s: tc says %v %s; plan: %v", value, terr, strings.TrimSpace(string(out)), err)
		switch {
		case terr == nil && err != nil:
			t.Errorf("%s: the kernel takes it, plan refused it: %v", value, err)
		case terr != nil && (err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "refused by tc in a scratch network namespace: "+strings.TrimSpace(string(out)))):
			t.Errorf("%s: the kernel refuses it (%s), plan: %v", value, strings.TrimSpace(string(out)), err)
		}
	}
	if got := l.rootQdisc(t); got != before {
		t.Errorf("plan changed a's root qdisc: %s, was %s", got, before)
	}
}
