package plan

import (
	"reflect"
	"strings"
	"testing"
)

// Each host's metrics address: its web: key, or the host in at: on port
// 9464.
func TestPrometheusTargets(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(`hosts:
  cm4: {at: ssh://pi@cm4.local, web: 10.0.0.4:9100}
  pi1: {at: ssh://pi@dramble1.local:2222, web: 9000}
  laptop: 192.168.1.20:7000
  nas: {at: "[fd00::5]", web: ":9464"}
flows:
  - {from: pi1, to: laptop, proto: udp}
sample: [cm4, nas]
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range pl.PrometheusTargets() {
		got = append(got, g.Labels["linerate_host"]+"="+strings.Join(g.Targets, ","))
	}
	want := []string{"cm4=10.0.0.4:9100", "pi1=dramble1.local:9000", "laptop=192.168.1.20:9464", "nas=[fd00::5]:9464"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets %q, want %q", got, want)
	}
	for _, bad := range []string{"0", "99999", "x:y", "bad_host!:9464", "[1:2"} {
		_, err := Parse("p.yaml", []byte("hosts:\n  a: {at: 10.0.0.1, web: \""+bad+"\"}\n  b: 10.0.0.2\nflows:\n  - {from: a, to: b, proto: udp}\n"))
		if err == nil || !strings.Contains(err.Error(), "web") {
			t.Errorf("web: %q: %v, want an error naming web", bad, err)
		}
	}
}
