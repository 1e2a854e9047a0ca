package testenv

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Inode is the namespace's inode number: the kernel's ns.inum, the number
// `ls -i /var/run/netns/NAME` and `lsns` show.
func (n *NetNS) Inode(t testing.TB) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(n.Handle), &st); err != nil {
		t.Fatalf("stat netns %s: %v", n.Name, err)
	}
	return st.Ino
}
