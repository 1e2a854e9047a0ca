package lab

import (
	"testing"

	"linerate/wire"
)

// The secret a lab's agents are started with is read where bench and
// serve read it.
func TestEnvTokenIsWires(t *testing.T) {
	if EnvToken != wire.TokenEnv {
		t.Errorf("lab.EnvToken %q, wire.TokenEnv %q", EnvToken, wire.TokenEnv)
	}
}
