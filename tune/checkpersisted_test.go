package tune

import (
	"strings"
	"testing"
)

// tune status's persisted part: systemd's files checked item by item,
// OpenWrt's (the same files) only when asked for by name, a target with
// nothing persisted left out.
func TestCheckPersisted(t *testing.T) {
	_, sys := fakeBox(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		sysctlDPath: persistMark + "\nnet.core.netdev_max_backlog = 1000\nnet.ipv4.tcp_rmem = 4096 87380 6291456\n",
	})
	checks, err := CheckPersisted(sys, root, "")
	if err != nil || len(checks) != 1 || checks[0].Target != TargetSystemd {
		t.Fatalf("every target: %+v %v, want systemd's alone", checks, err)
	}
	got := strings.Join(checks[0].Lines, "\n")
	for _, want := range []string{"net.core.netdev_max_backlog 1000: holds", "net.ipv4.tcp_rmem 4096 87380 6291456: differs, now 4096 131072 6291456"} {
		if !strings.Contains(got, want) {
			t.Errorf("lines lack %q:\n%s", want, got)
		}
	}
	if checks, err := CheckPersisted(sys, root, TargetOpenWrt); err != nil || len(checks) != 1 || checks[0].Target != TargetOpenWrt {
		t.Errorf("openwrt by name: %+v %v", checks, err)
	}
	if checks, err := CheckPersisted(sys, root, TargetTuned); err != nil || len(checks) != 0 {
		t.Errorf("tuned, nothing persisted: %+v %v", checks, err)
	}
	if _, err := CheckPersisted(sys, root, "upstart"); err == nil {
		t.Error("an unknown target: no error")
	}
}
