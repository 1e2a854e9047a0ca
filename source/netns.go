package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrNotLive is returned for what only a live source has, such as an open
// network namespace.
var ErrNotLive = errors.New("not a live source")

// OpenNetns opens the network namespace that src reads, for netlink
// sockets made in it (rtnetlink, nftables), and returns the open file and
// the namespace's inode number (the kernel's ns.inum, the key of drop
// reasons). The caller closes the file. A capture gives ErrNotLive.
func OpenNetns(src Source) (*os.File, uint64, error) {
	l, ok := src.(*Live)
	if !ok {
		return nil, 0, fmt.Errorf("%s: network namespace: %w", src.Name(), ErrNotLive)
	}
	path := filepath.Join(procRoot, "self", "ns", "net")
	if l.ns != nil {
		path = filepath.Join(procRoot, strconv.Itoa(os.Getpid()), "task", strconv.Itoa(l.ns.Tid()), "ns", "net")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("network namespace of %s: %w", l.name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("network namespace of %s: %w", l.name, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		f.Close()
		return nil, 0, fmt.Errorf("network namespace of %s: no inode", l.name)
	}
	return f, st.Ino, nil
}

// OwnNetns says whether src is the live network namespace every thread of
// this process runs in (NewLive, not NewLiveNetns): netlink sockets made
// anywhere in the process are in it, without a setns.
func OwnNetns(src Source) bool {
	l, ok := src.(*Live)
	return ok && l.ns == nil
}
