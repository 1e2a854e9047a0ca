package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// etcNetns is where `ip netns exec NAME` finds files to bind-mount over
// /etc for the command it runs (iproute2's bind_etc): Up writes each
// node's hosts file there, so node names resolve in commands started that
// way too, not only in those `lab exec` starts.
var etcNetns = "/etc/netns"

func etcHostsDir(netns string) string { return filepath.Join(etcNetns, netns) }

// etcNetnsMark is the file Up leaves in an /etc/netns it made: Down
// removes the directory once the mark is all that is left in it, whichever
// lab goes last.
const etcNetnsMark = ".linerate-made-this"

// etcNetnsDir makes /etc/netns with its mark if it is not there,
// journalled, so that Down removes it too. It is one step either way.
func (b *builder) etcNetnsDir() error {
	if _, err := os.Lstat(etcNetns); !errors.Is(err, fs.ErrNotExist) {
		return b.step()
	}
	i, err := b.journal(Object{Kind: KindHosts, Name: etcNetns})
	if err != nil {
		return err
	}
	if err := os.Mkdir(etcNetns, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make %s: %w", etcNetns, err)
	}
	mark := []byte("made by linerate lab up; lab down removes the directory when nothing else is in it\n")
	if err := os.WriteFile(filepath.Join(etcNetns, etcNetnsMark), mark, 0o644); err != nil {
		return fmt.Errorf("make %s: %w", etcNetns, err)
	}
	return b.finish(i)
}

// tidyEtcNetns removes /etc/netns when only the mark of a lab up that
// made it is left in it (or, with empty, nothing at all).
func tidyEtcNetns(empty bool) error {
	ents, err := os.ReadDir(etcNetns)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(ents) == 1 && ents[0].Name() == etcNetnsMark:
		if err := os.Remove(filepath.Join(etcNetns, etcNetnsMark)); err != nil {
			return err
		}
	case len(ents) != 0 || !empty:
		return nil
	}
	return removeEmptyDir(etcNetns)
}

// etcHosts writes /etc/netns/NETNS/hosts for node n, journalled first. A
// directory that is already there is someone else's — it is left alone
// and the node's names resolve only through `lab exec` — unless it holds
// nothing but a hosts file a lab of this name wrote for this node: /etc
// outlives a reboot, which takes the lab's state on /run with it.
func (b *builder) etcHosts(n Node) error {
	dir := etcHostsDir(n.Netns)
	_, err := os.Lstat(dir)
	exists := err == nil
	if exists && !b.lab.leftHosts(n.Name, dir) {
		return b.step()
	}
	i, err := b.journal(Object{Kind: KindHosts, Netns: n.Netns, Name: dir})
	if err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !exists {
		return fmt.Errorf("hosts of %s: %w", n.Netns, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(b.lab.Hosts(n.Name)), 0o644); err != nil {
		return fmt.Errorf("hosts of %s: %w", n.Netns, err)
	}
	return b.finish(i)
}

// leftHosts reports whether dir holds only a hosts file that a lab of
// this name wrote for node (its first line says so).
func (l *Lab) leftHosts(node, dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "hosts" || !ents[0].Type().IsRegular() {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "hosts"))
	first, _, _ := strings.Cut(l.Hosts(node), "\n")
	return err == nil && bytes.HasPrefix(b, []byte(first+"\n"))
}

// removeEtcHosts removes what etcHosts made for a journalled object:
// /etc/netns itself if it is empty, or a node's hosts file if it holds what Up wrote (or nothing: Up was killed while
// writing it), then the directory if that leaves it empty. Anything else
// in it is someone else's and stays, with the directory.
func (l *Lab) removeEtcHosts(o Object) error {
	node := ""
	for _, n := range l.Nodes {
		if n.Netns == o.Netns {
			node = n.Name
		}
	}
	if o.Name == etcNetns && o.Netns == "" {
		return tidyEtcNetns(true)
	}
	dir := etcHostsDir(o.Netns)
	if o.Name != dir {
		return fmt.Errorf("journal names %s for the hosts of %s, not %s", o.Name, o.Netns, dir)
	}
	p := filepath.Join(dir, "hosts")
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(b) == 0 || (node != "" && bytes.Equal(b, []byte(l.Hosts(node)))):
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	if err := removeEmptyDir(dir); err != nil {
		return err
	}
	return tidyEtcNetns(false)
}

// removeEmptyDir removes dir if it is empty; one that holds something, or
// is gone, is left as it is.
func removeEmptyDir(dir string) error {
	err := os.Remove(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		return err
	}
	return nil
}
