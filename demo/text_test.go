package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/internal/usage"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// testReport is a report over the real bench results in testdata.
func testReport(t *testing.T, speed int64) *Report {
	t.Helper()
	r := &Report{Lab: "demo", Topology: "router", SpeedBps: speed, ShapeBps: ShapeRate(speed), Duration: 3, Warmup: 1,
		Client: "lan", Router: "router", Server: "wan", ServerAddr: netip.MustParseAddr("10.231.2.2")}
	for i, file := range []string{"tcp-bidir", "tcp-mss88", "udp-64"} {
		e := Experiments[i]
		c := &Config{Duration: 3 * time.Second, Warmup: time.Second, Idle: 500 * time.Millisecond}
		o, err := outcome(e, benchArgs(e, c), readBench(t, file), "lan", "wan", speed)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		r.Outcomes = append(r.Outcomes, *o)
	}
	r.Diagnosis, r.Tuning = testTuning(t)
	return r
}

// testTuning is the diagnose and tune steps' part of a real demo's JSON
// report (demo --quick --json, in testdata).
func testTuning(t *testing.T) (*Diagnosis, *Tuning) {
	t.Helper()
	var d Diagnosis
	var tu Tuning
	for file, v := range map[string]any{"diagnosis": &d, "tune": &tu} {
		if err := json.Unmarshal(readBench(t, file), v); err != nil {
			t.Fatalf("testdata/%s.json: %v", file, err)
		}
	}
	return &d, &tu
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test ./demo -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./demo -update rewrites it); got:\n%s", p, got)
	}
}

func TestWriteText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		speed int64
	}{{"report-1g.golden", 1e9}, {"report-uncapped.golden", 0}} {
		var b bytes.Buffer
		if err := WriteText(&b, testReport(t, tc.speed)); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.name, b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteText(&b, &Report{}); err != nil || !strings.Contains(b.String(), "no experiment finished") {
		t.Errorf("empty report: %q, %v", b.String(), err)
	}
}

func TestOutcomeLines(t *testing.T) {
	r := testReport(t, 1e9)
	var all []string
	for i := range r.Outcomes {
		all = append(all, outcomeLines(&r.Outcomes[i], r.SpeedBps)...)
	}
	got := strings.Join(all, "\n") + "\n"
	golden(t, "progress-1g.golden", []byte(got))
	for _, want := range []string{
		"lan→wan  949.4 Mb/s  81,960 pps  = 100.8 % of a 1G port (941.5 Mb/s, 81,274 pps in 1518-byte frames)",
		"wan→lan  947.5 Mb/s",
		"86,978 pps  = 11.6 % of a 1G port (457.8 Mb/s, 753,012 pps in 146-byte frames), 4 retransmits",
		"87,936 pps  = 5.9 % of a 1G port (761.9 Mb/s, 1,488,095 pps in 64-byte frames)",
		"bench: limited by network path: no thread was saturated",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lines lack %q:\n%s", want, got)
		}
	}
}

func TestCheck(t *testing.T) {
	c := Config{Self: "/bin/true"}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.Name != DefaultName || c.Duration != DefaultDuration || c.Warmup != DefaultWarmup || c.Idle != DefaultIdle ||
		c.TuneRounds != DefaultTuneRounds || c.TuneDuration != DefaultTuneDuration ||
		c.Dir == "" || c.Progress == nil || len(c.Steps) != len(Experiments)+2 {
		t.Errorf("defaults not filled in: %+v", c)
	}
	for _, tc := range []struct {
		c       Config
		want    string
		isUsage bool
	}{
		{Config{}, "no linerate binary", false},
		{Config{Self: "x", Name: "Demo!"}, "--name", true},
		{Config{Self: "x", Name: "a-very-long-lab-name-indeed"}, "--name", true},
		{Config{Self: "x", Duration: -time.Second}, "--duration -1s", true},
		{Config{Self: "x", Duration: 10 * time.Minute}, "--duration 10m0s", true},
		{Config{Self: "x", Warmup: -time.Second}, "negative", true},
		{Config{Self: "x", Speed: 5}, "--speed 5", true},
		{Config{Self: "x", Speed: 1e12}, "--speed 1T", true},
		{Config{Self: "x", TuneRounds: -1}, "--rounds -1: want 1 to 10", true},
		{Config{Self: "x", TuneRounds: MaxTuneRounds + 1}, "--rounds 11", true},
		{Config{Self: "x", TuneDuration: time.Millisecond}, "--round-duration 1ms", true},
		{Config{Self: "x", TuneDuration: time.Hour}, "--round-duration 1h0m0s", true},
	} {
		err := tc.c.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) || usage.Is(err) != tc.isUsage {
			t.Errorf("Check(%+v) = %v, want an error with %q (usage %v)", tc.c, err, tc.want, tc.isUsage)
		}
	}
}

func TestBenchArgs(t *testing.T) {
	c := &Config{Duration: time.Second, Warmup: 500 * time.Millisecond, Idle: 200 * time.Millisecond}
	got := commandLine(benchArgs(Experiments[1], c))
	want := "bench tcp --mss 88 --from lan --to wan --duration 1s --warmup 500ms --idle 200ms --json --no-save"
	if got != want {
		t.Errorf("bench args %q, want %q", got, want)
	}
}

func TestSteps(t *testing.T) {
	steps := Steps()
	if len(steps) != 5 {
		t.Fatalf("%d steps, want the three experiments, diagnose and tune", len(steps))
	}
	names := []string{Experiments[0].Name, Experiments[1].Name, Experiments[2].Name, "diagnose", "tune"}
	for i, st := range steps {
		if st.Name != names[i] || st.Title == "" || st.Run == nil {
			t.Errorf("step %d: %+v, want %s", i, st, names[i])
		}
	}
}

func TestRunBadConfig(t *testing.T) {
	// Bad input is refused before anything is built, root or not.
	_, err := Run(context.Background(), Config{Self: "/bin/true", Name: "BAD NAME"})
	if err == nil || !usage.Is(err) {
		t.Errorf("Run with a bad name: %v, want a usage error", err)
	}
}

func TestJoinErrors(t *testing.T) {
	a, b := errors.New("step failed"), context.Canceled
	if joinErrors(nil) != nil || joinErrors([]error{nil, nil}) != nil {
		t.Error("no errors should join to nil")
	}
	if got := joinErrors([]error{nil, a}); got != a {
		t.Errorf("one error: %v", got)
	}
	got := joinErrors([]error{a, nil, b})
	if got.Error() != "step failed; context canceled" || !errors.Is(got, a) || !errors.Is(got, b) {
		t.Errorf("two errors: %q, want both on one line and in the chain", got)
	}
}
