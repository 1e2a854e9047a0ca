package feature_test

import (
	"errors"
	"fmt"
	"testing"

	"linerate/source/ethtool"
	"linerate/source/feature"
	"linerate/source/qstats"
	"linerate/source/xdpcount"
)

// Every source's "not supported" is the one ErrNotSupported, keeps its
// own sentinel for the callers that test it, and says what is missing.
func TestEverySourceWrapsErrNotSupported(t *testing.T) {
	for _, c := range []struct {
		name     string
		sentinel error
		feature  string
		msg      string
	}{
		{"ethtool", ethtool.ErrNotSupported, "", "eth0: ETHTOOL_GRINGPARAM: not supported by this driver"},
		{"xdpcount", xdpcount.ErrUnsupported, "xdp counter", "eth0: xdp counter unavailable"},
		{"qstats", qstats.ErrUnsupported, "per-queue statistics (netdev qstats)", "eth0: per-queue statistics (netdev qstats) unavailable"},
	} {
		var err error
		if c.name == "ethtool" {
			err = fmt.Errorf("eth0: ETHTOOL_GRINGPARAM: %w", c.sentinel)
		} else {
			err = fmt.Errorf("eth0: %w", c.sentinel)
		}
		if !errors.Is(err, feature.ErrNotSupported) {
			t.Errorf("%s: %v is not feature.ErrNotSupported", c.name, err)
		}
		if !errors.Is(err, c.sentinel) {
			t.Errorf("%s: %v is not its own sentinel", c.name, err)
		}
		var fe *feature.Error
		if !errors.As(err, &fe) || fe.Feature != c.feature {
			t.Errorf("%s: errors.As gives %+v, want feature %q", c.name, fe, c.feature)
		}
		if err.Error() != c.msg {
			t.Errorf("%s: %q, want %q", c.name, err, c.msg)
		}
	}
	if errors.Is(errors.New("not supported"), feature.ErrNotSupported) {
		t.Error("an error of the same words is not ErrNotSupported")
	}
}
