package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Down removes a lab recorded in the default directory.
func Down(name string) error { return DefaultDir().Down(name) }

// Down removes the named lab: it stops its agents and the processes still
// running in its namespaces (SIGTERM, then SIGKILL after 2 s: they would
// keep the namespaces alive), removes exactly the objects its journal
// records, in reverse order, then its files. It works on a lab whose Up crashed
// half way. A namespace is removed only if it is the very one Up created
// (same device and inode); one that merely has the name is left untouched.
func (d Dir) Down(name string) error {
	if _, err := d.Load(name); err != nil {
		return err
	}
	if err := RequireRoot("lab down"); err != nil {
		return err
	}
	lk, err := d.lock(name)
	if err != nil {
		return err
	}
	l, err := d.Load(name) // again, under the lock
	if err != nil {
		lk.release(false)
		return err
	}
	if err := d.remove(l); err != nil {
		lk.release(false)
		return err
	}
	return lk.release(true)
}

// DownAll removes every lab in the default directory.
func DownAll() ([]string, error) { return DefaultDir().DownAll() }

// DownAll removes every lab recorded in d and returns the names of those
// it removed.
func (d Dir) DownAll() ([]string, error) {
	labs, err := d.List()
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, l := range labs {
		if err := d.Down(l.Spec.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, l.Spec.Name)
	}
	return done, errors.Join(errs...)
}

// remove undoes l's journal and deletes its state file; the caller holds
// the lab's lock. Links and tables are deleted explicitly before their
// namespace is unbound, so none lives on in a namespace that a process
// still holds.
func (d Dir) remove(l *Lab) error {
	handles := map[string]netns.NsHandle{}
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	var errs []error
	for _, o := range l.Objects {
		if o.Kind != KindNetns {
			continue
		}
		h, ok, err := openOwned(o)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			handles[o.Netns] = h
		}
	}
	ids := map[nsID]bool{}
	for _, h := range handles {
		if dev, ino, err := identity(int(h)); err == nil {
			ids[nsID{dev, ino}] = true
		}
	}
	if err := stopAgents(l.Agents, 2*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := stopGuests(l.Guests, 5*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := stopProcesses(ids, 2*time.Second); err != nil {
		errs = append(errs, err)
	}
	for i := len(l.Objects) - 1; i >= 0; i-- {
		o := l.Objects[i]
		switch o.Kind {
		case KindHosts:
			if err := l.removeEtcHosts(o); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", o.Name, err))
			}
		case KindTable:
			if h, ok := handles[o.Netns]; ok {
				if err := deleteTable(h); err != nil {
					errs = append(errs, fmt.Errorf("delete nftables table %s in %s: %w", o.Name, o.Netns, err))
				}
			}
		case KindVeth, KindTap:
			if h, ok := handles[o.Netns]; ok {
				if err := deleteLink(h, o.Name); err != nil {
					errs = append(errs, fmt.Errorf("delete %s %s in %s: %w", o.Kind, o.Name, o.Netns, err))
				}
			}
		case KindNetns:
			own, err := owner(o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if own == owned || own == placeholder {
				if err := unbindNetns(o.Netns); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab down %s: %w", l.Spec.Name, err)
	}
	if err := os.RemoveAll(d.guestDir(l.Spec.Name)); err != nil {
		return fmt.Errorf("lab down %s: %w", l.Spec.Name, err)
	}
	if err := d.removeAgentFiles(l.Spec.Name); err != nil {
		return fmt.Errorf("lab down %s: %w", l.Spec.Name, err)
	}
	// The state file, and the temporary one a killed save may have left.
	p := d.statePath(l.Spec.Name)
	for _, f := range []string{p + ".tmp", p} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove lab state: %w", err)
		}
	}
	return nil
}

// deleteLink deletes an interface (and so its veth peer) in namespace h;
// one already gone is not an error.
func deleteLink(h netns.NsHandle, name string) error {
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return err
	}
	defer nl.Close()
	link, err := nl.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	return nl.LinkDel(link)
}
