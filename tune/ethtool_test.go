package tune

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"linerate/source/ethtool"
)

// The ethtool kinds that veth lacks (coalesce, rings, RSS, flow hash) are
// checked here against an in-memory NIC holding the values a driver would:
// what is tested is tune's side (keys, maximums, the exact restore item),
// not a driver. The netns tests cover channels and features on a real one.

// memNIC is one interface's ethtool settings, as an igb would report them.
type memNIC struct {
	rings    ethtool.Rings
	coalesce ethtool.Coalesce
	rss      ethtool.RSS
	hash     map[ethtool.FlowType]ethtool.FlowHash
}

type memEthtool map[string]*memNIC

func (m memEthtool) nic(iface string) (*memNIC, error) {
	n, ok := m[iface]
	if !ok {
		return nil, fmt.Errorf("%s: %w", iface, ethtool.ErrNoInterface)
	}
	return n, nil
}

func (m memEthtool) DriverInfo(iface string) (ethtool.DriverInfo, error) {
	return ethtool.DriverInfo{Driver: "igb"}, nil
}
func (m memEthtool) LinkInfo(string) (ethtool.LinkInfo, error) {
	return ethtool.LinkInfo{}, ethtool.ErrNotSupported
}
func (m memEthtool) Features(string) (ethtool.Features, error) { return nil, ethtool.ErrNotSupported }
func (m memEthtool) Channels(string) (ethtool.Channels, error) {
	return ethtool.Channels{}, ethtool.ErrNotSupported
}
func (m memEthtool) Stats(string) (ethtool.Stats, error) { return nil, ethtool.ErrNotSupported }
func (m memEthtool) Close() error                        { return nil }
func (m memEthtool) Rings(iface string) (ethtool.Rings, error) {
	n, err := m.nic(iface)
	if err != nil {
		return ethtool.Rings{}, err
	}
	return n.rings, nil
}
func (m memEthtool) Coalesce(iface string) (ethtool.Coalesce, error) {
	n, err := m.nic(iface)
	if err != nil {
		return ethtool.Coalesce{}, err
	}
	c := n.coalesce
	c.Params = map[string]uint32{}
	for k, v := range n.coalesce.Params {
		c.Params[k] = v
	}
	return c, nil
}
func (m memEthtool) RSS(iface string) (ethtool.RSS, error) {
	n, err := m.nic(iface)
	if err != nil {
		return ethtool.RSS{}, err
	}
	r := n.rss
	r.Indirection = slices.Clone(n.rss.Indirection)
	return r, nil
}
func (m memEthtool) FlowHash(iface string, ft ethtool.FlowType) (ethtool.FlowHash, error) {
	n, err := m.nic(iface)
	if err != nil {
		return 0, err
	}
	return n.hash[ft], nil
}
func (m memEthtool) SetFeatures(string, map[string]bool) error { return ethtool.ErrNotSupported }
func (m memEthtool) SetChannels(string, ethtool.Channels) error {
	return ethtool.ErrNotSupported
}
func (m memEthtool) SetRings(iface string, r ethtool.Rings) error {
	n, _ := m.nic(iface)
	n.rings.RX, n.rings.TX = r.RX, r.TX
	return nil
}
func (m memEthtool) SetCoalesce(iface string, c ethtool.Coalesce) error {
	n, _ := m.nic(iface)
	n.coalesce.AdaptiveRX, n.coalesce.AdaptiveTX = c.AdaptiveRX, c.AdaptiveTX
	for k, v := range c.Params {
		n.coalesce.Params[k] = v
	}
	return nil
}
func (m memEthtool) SetIndirection(iface string, t []uint32) error {
	n, _ := m.nic(iface)
	n.rss.Indirection = slices.Clone(t)
	return nil
}
func (m memEthtool) SetFlowHash(iface string, ft ethtool.FlowType, h ethtool.FlowHash) error {
	n, _ := m.nic(iface)
	n.hash[ft] = h
	return nil
}

// apu4NIC is the APU4's i211 of the seed: 2 queues, an uneven 128-entry
// table, udp4 hashed on addresses only.
func apu4NIC() *memNIC {
	t := make([]uint32, 128)
	for i := range t {
		if i%4 == 3 {
			t[i] = 1
		}
	}
	return &memNIC{
		rings:    ethtool.Rings{RXMax: 4096, TXMax: 4096, RX: 256, TX: 256},
		coalesce: ethtool.Coalesce{AdaptiveRX: true, Params: map[string]uint32{"rx-usecs": 3, "rx-frames": 0}},
		rss:      ethtool.RSS{RXRings: 2, Indirection: t},
		hash:     map[ethtool.FlowType]ethtool.FlowHash{ethtool.UDP4: ethtool.HashIPSrc | ethtool.HashIPDst},
	}
}

// clip keeps the first 50 bytes of a long value.
func clip(s string) string { return s[:min(len(s), 50)] }

func TestEthtoolKinds(t *testing.T) {
	root, sys := fakeBox(t)
	writeFiles(t, root, map[string]string{"sys/class/net/enp4s0/mtu": "1500\n"})
	et := memEthtool{"enp4s0": apu4NIC()}
	sys.SetEthtool(et)
	orig := apu4NIC()

	p, err := NewPlan(sys, []Item{
		{Kind: "rings", Target: "enp4s0", Value: "rx=max"},
		{Kind: "coalesce", Target: "enp4s0", Value: "rx-usecs=100,rx-frames=10"},
		{Kind: "rss-equal", Target: "enp4s0", Value: "2"},
		{Kind: "flow-hash", Target: "enp4s0/udp4", Value: "sdfn"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Changes() {
		got = append(got, fmt.Sprintf("%s %s -> %s reset=%v restore=%s", c.Kind, c.From, c.To, c.ResetsLink, clip(c.Restore.String())))
	}
	want := []string{
		"rings rx=256 -> rx=4096 reset=true restore=rings:enp4s0=rx=256",
		"coalesce rx-usecs=3,rx-frames=0 -> rx-usecs=100,rx-frames=10 reset=false restore=coalesce:enp4s0=rx-usecs=3,rx-frames=0",
		"rss-equal custom, buckets per queue 96/32 -> 2 reset=false restore=rss-table:enp4s0=0,0,0,1,0,0,0,1,0,0,0,1,0,0,0,1,0",
		"flow-hash sd -> sdfn reset=false restore=flow-hash:enp4s0/udp4=sd",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := et["enp4s0"]
	if n.rings.RX != 4096 || n.rings.TX != 256 || n.coalesce.Params["rx-usecs"] != 100 || !n.coalesce.AdaptiveRX ||
		!slices.Equal(n.rss.Indirection, ethtool.EqualTable(128, 2)) || n.hash[ethtool.UDP4].Letters() != "sdfn" {
		t.Errorf("after apply: %+v", n)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.rings != orig.rings || n.coalesce.Params["rx-usecs"] != 3 || n.coalesce.Params["rx-frames"] != 0 ||
		!slices.Equal(n.rss.Indirection, orig.rss.Indirection) || n.hash[ethtool.UDP4] != orig.hash[ethtool.UDP4] {
		t.Errorf("after rollback: %+v", n)
	}

	for _, tc := range []struct {
		it   Item
		want string
	}{
		{Item{Kind: "rings", Target: "enp4s0", Value: "rx=8192"}, "the enp4s0 rx ring takes 1 to 4096"},
		{Item{Kind: "rings", Target: "enp4s0", Value: "rx=0"}, "the enp4s0 rx ring takes 1 to 4096"},
		{Item{Kind: "coalesce", Target: "enp4s0", Value: "rx-usec=1"}, `unknown key "rx-usec"`},
		{Item{Kind: "coalesce", Target: "enp4s0", Value: "adaptive-rx=maybe"}, "want on or off"},
		{Item{Kind: "rss-equal", Target: "enp4s0", Value: "3"}, "enp4s0 has 2 rx rings"},
		{Item{Kind: "rss-table", Target: "enp4s0", Value: "0,1"}, "value has 2 buckets, enp4s0's table has 128"},
		{Item{Kind: "flow-hash", Target: "enp4s0/sctp4", Value: "sd"}, "want IFACE/tcp4"},
		{Item{Kind: "flow-hash", Target: "enp4s0/udp4", Value: "sdx"}, "rx-flow-hash letters"},
		{Item{Kind: "channels", Target: "enp4s0", Value: "combined=2"}, "channels not supported by driver igb"},
	} {
		if _, err := Build(sys, tc.it); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.it, err, tc.want)
		}
	}
}
