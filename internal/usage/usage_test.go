package usage

import (
	"errors"
	"fmt"
	"testing"
)

// A field error is bad input naming the field, and the flag once a
// command maps it.
func TestFieldFlags(t *testing.T) {
	err := Field("MTU", "%d: want %d to %d", 67, 68, 65535)
	var fe *FieldError
	if !Is(err) || !errors.As(err, &fe) || fe.Field != "MTU" || err.Error() != "MTU 67: want 68 to 65535" {
		t.Fatalf("err %v (usage %v)", err, Is(err))
	}
	if got := Flags(err, map[string]string{"Rate": "--rate"}).Error(); got != "MTU 67: want 68 to 65535" {
		t.Errorf("a field the map lacks: %q", got)
	}
	if got := fmt.Errorf("lab up: %w", Flags(err, map[string]string{"MTU": "--mtu"})).Error(); got != "lab up: --mtu 67: want 68 to 65535" {
		t.Errorf("mapped: %q", got)
	}
	if Flags(nil, map[string]string{"MTU": "--mtu"}) != nil {
		t.Error("nil is not nil")
	}
}
