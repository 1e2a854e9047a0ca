package vm

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tunDev is the kernel's tun/tap clone device.
const tunDev = "/dev/net/tun"

// OpenTap makes a tap interface called name, with queues queues, in the
// calling thread's network namespace, and returns one open file per queue.
// The tap carries virtio-net headers (QEMU's vnet_hdr=on, so the guest's
// offloads pass through) and is not persistent: it goes away when the
// last of its files is closed, so a guest's taps end with its QEMU.
func OpenTap(name string, queues int) ([]*os.File, error) {
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("tap name %q is too long", name)
	}
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if queues > 1 {
		flags |= unix.IFF_MULTI_QUEUE
	}
	var files []*os.File
	for q := 0; q < queues; q++ {
		fd, err := unix.Open(tunDev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("open %s: %w", tunDev, err)
		}
		var req struct {
			name  [unix.IFNAMSIZ]byte
			flags uint16
			_     [22]byte
		}
		copy(req.name[:], name)
		req.flags = flags
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req))); errno != 0 {
			unix.Close(fd)
			closeAll(files)
			return nil, fmt.Errorf("tap %s queue %d: TUNSETIFF: %w", name, q, errno)
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("tap %s queue %d", name, q)))
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
