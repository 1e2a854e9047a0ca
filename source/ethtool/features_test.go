package ethtool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		name, pattern string
		want          bool
	}{
		{"rx-checksum", "rx-checksum", true},
		{"rx-checksumx", "rx-checksum", false},
		{"tx-checksum-ipv4", "tx-checksum-*", true},
		{"tx-checksum-", "tx-checksum-*", true},
		{"tx-checksumming", "tx-checksum-*", false},
		{"tx-scatter-gather", "tx-scatter-gather*", true},
		{"tx-scatter-gather-fraglist", "tx-scatter-gather*", true},
		{"tx-tcp-segmentation", "tx-tcp*-segmentation", true},
		{"tx-tcp6-segmentation", "tx-tcp*-segmentation", true},
		{"tx-tcp-accecn-segmentation", "tx-tcp*-segmentation", true},
		{"tx-udp-segmentation", "tx-tcp*-segmentation", false},
		{"tx-tcp-segmentatio", "tx-tcp*-segmentation", false},
	} {
		if got := patternMatch(tc.name, tc.pattern); got != tc.want {
			t.Errorf("patternMatch(%q, %q) = %v", tc.name, tc.pattern, got)
		}
	}
}

// loadRawFeatures reads a features-raw.txt written by TestUpdateTestdata:
// the kernel's feature bits of one interface, as ETHTOOL_GSTRINGS and
// ETHTOOL_GFEATURES returned them.
func loadRawFeatures(t *testing.T, file string) ([]string, []featureState) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var states []featureState
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var i int
		var name string
		var av, rq, ac, nc int
		if _, err := fmt.Sscanf(l, "%d %s %d %d %d %d", &i, &name, &av, &rq, &ac, &nc); err != nil || i != len(names) {
			t.Fatalf("%s: bad line %q (%v)", file, l, err)
		}
		if name == "-" {
			name = ""
		}
		names = append(names, name)
		states = append(states, featureState{available: av == 1, requested: rq == 1, active: ac == 1, neverChanged: nc == 1})
	}
	return names, states
}

// From the kernel's raw feature bits, the arrangement gives exactly what
// `ethtool -k` printed for the same interface at the same time.
func TestArrangeFeaturesLikeEthtool(t *testing.T) {
	for _, dir := range []string{"virtio_net", "veth"} {
		names, states := loadRawFeatures(t, dir+"/features-raw.txt")
		want, _, err := ParseFeatures(open(t, dir+"/k.txt"))
		if err != nil {
			t.Fatal(err)
		}
		got := arrangeFeatures(names, states)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: arrangement differs from ethtool -k:\n%s", dir, RenderFeatures("x", got))
		}
	}
}

func TestArrangeFeaturesGroupsAndMarkers(t *testing.T) {
	names := []string{"rx-gro", "rx-gro-list", "tx-checksum-ipv4", "tx-checksum-sctp", "netns-local"}
	states := []featureState{
		{available: true, requested: true, active: false}, // GRO asked on, held off
		{available: true}, // rx-gro-list off
		{available: true, neverChanged: true, active: true}, // never changes: fixed
		{available: false}, // not changeable
		{available: false, requested: true, active: true}, // fixed on
	}
	off := func(name string) Feature { return Feature{Name: name} }
	want := Features{
		off("rx-checksumming"), // no kernel feature matches: an "off" line
		{Name: "tx-checksumming", On: true, Fixed: true},
		{Name: "tx-checksum-ipv4", On: true, Fixed: true, Parent: "tx-checksumming"},
		{Name: "tx-checksum-sctp", Fixed: true, Parent: "tx-checksumming"},
		off("scatter-gather"), off("tcp-segmentation-offload"), off("generic-segmentation-offload"),
		{Name: "generic-receive-offload", Requested: "on"}, // one member: the legacy name
		off("large-receive-offload"), off("rx-vlan-offload"), off("tx-vlan-offload"),
		off("ntuple-filters"), off("receive-hashing"),
		{Name: "rx-gro-list"},
		{Name: "netns-local", On: true, Fixed: true},
	}
	got := arrangeFeatures(names, states)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	// And it prints as ethtool would.
	text := RenderFeatures("e", got)
	for _, line := range []string{"tx-checksumming: on\n\ttx-checksum-ipv4: on [fixed]\n", "generic-receive-offload: off [requested on]\n", "rx-checksumming: off\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("no %q in\n%s", line, text)
		}
	}
}

func TestResolveFeatures(t *testing.T) {
	names := []string{"rx-gro", "rx-lro", "tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-sctp", "rx-gro-list", ""}
	states := []featureState{
		{available: true, active: true},   // rx-gro on
		{available: false},                // rx-lro fixed off
		{available: false, active: false}, // tx-checksum-ipv4 fixed off
		{available: true, active: true},   // tx-checksum-ip-generic
		{available: true, active: false},  // tx-checksum-sctp
		{available: true},                 // rx-gro-list off
		{},
	}
	for _, tc := range []struct {
		name    string
		want    map[string]bool
		change  featureChange
		errIs   error
		errText string
	}{
		{"kernel name", map[string]bool{"rx-gro-list": true}, featureChange{5: true}, nil, ""},
		{"long name", map[string]bool{"generic-receive-offload": false}, featureChange{0: false}, nil, ""},
		{"short name", map[string]bool{"gro": false}, featureChange{0: false}, nil, ""},
		{"already so", map[string]bool{"rx-gro": true}, featureChange{}, nil, ""},
		{"group covers changeable members", map[string]bool{"tx": true}, featureChange{4: true}, nil, ""},
		{"group off", map[string]bool{"tx-checksumming": false}, featureChange{3: false}, nil, ""},
		{"fixed", map[string]bool{"rx-lro": true}, nil, ErrNotSupported, "fixed off"},
		{"fixed legacy", map[string]bool{"lro": true}, nil, ErrNotSupported, "fixed off"},
		{"fixed as wanted", map[string]bool{"rx-lro": false}, featureChange{}, nil, ""},
		{"unknown", map[string]bool{"warp-drive": true}, nil, nil, `unknown feature "warp-drive"`},
		{"absent legacy", map[string]bool{"rxhash": true}, nil, ErrNotSupported, ""},
		{"both ways", map[string]bool{"gro": true, "rx-gro": false}, nil, nil, "both on and off"},
	} {
		got, err := resolveFeatures("eth0", names, states, tc.want)
		switch {
		case tc.errIs != nil || tc.errText != "":
			if err == nil || (tc.errIs != nil && !errors.Is(err, tc.errIs)) || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("%s: got %v, want error %v %q", tc.name, err, tc.errIs, tc.errText)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !reflect.DeepEqual(got, tc.change):
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.change)
		}
	}
}
