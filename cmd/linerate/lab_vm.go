//go:build !small

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/internal/usage"
	"linerate/lab"
	"linerate/lab/vm"
)

// labVMOptions are lab up's flags for nodes that are virtual machines.
type labVMOptions struct {
	nodes  string
	nic    string
	image  string
	cpus   int
	memory int
	boot   time.Duration
}

func (o *labVMOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.nodes, "vm", "", "make these nodes (comma-separated) QEMU guests booting the host's Debian kernel, each link a NIC driven by the kernel's own driver (KVM where it works, TCG otherwise)")
	f.StringVar(&o.nic, "nic", string(vm.E1000E), "with --vm: the guests' NIC model: e1000e, virtio (virtio-net: --queues N, RSS) or vmxnet3")
	f.StringVar(&o.image, "vm-image", lab.ImageInitramfs, "with --vm: initramfs (busybox, boots in seconds) or debian (systemd on a disk of its own, survives lab reboot; built once with mmdebstrap)")
	f.IntVar(&o.cpus, "vm-cpus", lab.DefaultVMCPUs, fmt.Sprintf("with --vm: CPUs of each guest, 1 to %d", lab.MaxVMCPUs))
	f.IntVar(&o.memory, "vm-memory", lab.DefaultVMMemoryMB, fmt.Sprintf("with --vm: memory of each guest in MiB, %d to %d", lab.MinVMMemoryMB, lab.MaxVMMemoryMB))
	f.DurationVar(&o.boot, "vm-boot-timeout", 0, fmt.Sprintf("with --vm: how long each boot may take until the guest's agent answers (default %s, %s for debian); a boot silent for half of it is reset once", lab.DefaultBootTimeout, lab.DefaultDebianBootTimeout))
}

// spec turns the flags into a lab.VM, nil without --vm.
func (o *labVMOptions) spec(cmd *cobra.Command) (*lab.VM, error) {
	if o.nodes == "" {
		for _, f := range []string{"nic", "vm-image", "vm-cpus", "vm-memory", "vm-boot-timeout"} {
			if cmd.Flags().Changed(f) {
				return nil, usage.Errorf("--%s sets up virtual machine nodes: it goes with --vm NODE", f)
			}
		}
		return nil, nil
	}
	model, err := vm.ParseModel(o.nic)
	if err != nil {
		return nil, usage.Errorf("--nic: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--vm: the guests run this linerate: %w", err)
	}
	var nodes []string
	for _, n := range strings.Split(o.nodes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil, usage.Errorf("--vm %q names no node", o.nodes)
	}
	return &lab.VM{Nodes: nodes, NIC: model, Image: o.image, CPUs: o.cpus, MemoryMB: o.memory, BootTimeout: o.boot, Binary: self}, nil
}

func newLabRebootCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reboot NAME NODE",
		Short: "Reboot a node that is a virtual machine and wait until it is back",
		Long: `reboot restarts the guest of a VM node (lab up --vm) the way its own system
does (systemd in a debian guest, busybox in an initramfs one), then waits
until it has booted, named and addressed its NICs again and, in a lab with
--serve, its agent answers. A debian guest keeps what was written to its
disk (tune persist's units); an initramfs guest starts afresh.`,
		Example: `  sudo linerate lab reboot r router
  sudo linerate lab exec r router -- linerate tune status`,
		Args: argsWith(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := o.dir().Load(args[0])
			if err != nil {
				return err
			}
			start := time.Now()
			st, err := l.Reboot(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s rebooted in %s (boot %s, kernel %s, %s)\n", args[1],
				time.Since(start).Round(100*time.Millisecond), st.Hello.BootID, st.Hello.Kernel, st.Accel)
			return nil
		},
	}
}

func newLabImageCmd() *cobra.Command {
	var rebuild bool
	c := &cobra.Command{
		Use:   "image debian",
		Short: "Build (or rebuild) the Debian image VM nodes boot with --vm-image debian",
		Long: `image builds the disk image that lab up --vm-image debian boots: a Debian root
(the host's release) made by mmdebstrap from Debian's archive, with systemd,
iproute2, ethtool and the host kernel's network modules. It is kept in the
cache directory ($LINERATE_CACHE_DIR, default ` + lab.DefaultCacheDir + `) and
built only when missing; --rebuild builds it again. lab up builds it too when
it is missing.`,
		Example: `  sudo linerate lab image debian
  sudo linerate lab image debian --rebuild`,
		Args: argsWith(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != lab.ImageDebian {
				return usage.Errorf("image %q: only %s images are built (initramfs ones are made at each lab up)", args[0], lab.ImageDebian)
			}
			if err := lab.RequireRoot("lab image"); err != nil {
				return err
			}
			k, err := vm.FindKernel()
			if err != nil {
				return err
			}
			dir := lab.CacheDir()
			p := vm.DebianImagePath(dir, k)
			if rebuild {
				err = vm.BuildDebianImage(cmd.Context(), dir, k, cmd.ErrOrStderr())
			} else {
				p, err = vm.DebianImage(cmd.Context(), dir, k, cmd.ErrOrStderr())
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), p)
			return nil
		},
	}
	c.Flags().BoolVar(&rebuild, "rebuild", false, "build the image again even if it is in the cache")
	return c
}

// newLabSuperviseCmd is the process that runs one guest (started by lab
// up, not by hand).
func newLabSuperviseCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "vm-supervise FILE",
		Short:   "Run a lab guest's QEMU and its session (started by lab up)",
		Example: "  linerate lab vm-supervise /run/linerate/lab/p.vm/b/supervisor.json   # what lab up --vm b starts",
		Hidden:  true,
		Args:    argsWith(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := vm.LoadSupervisor(args[0])
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return cfg.Run(ctx, cmd.ErrOrStderr())
		},
	}
}

// newLabGuestCmd is linerate's agent inside a guest (started by the
// guest's init).
func newLabGuestCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "guest",
		Short:   "Inside a lab guest: answer the host over virtio-serial",
		Example: "  linerate lab guest   # what a guest's init (busybox init, systemd) runs",
		Hidden:  true,
		Args:    argsWith(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return vm.Guest(cmd.Context(), cmd.ErrOrStderr())
		},
	}
}

// newLabVMExecCmd runs a command in a guest through its supervisor's
// socket (what lab exec and lab.Start run for a VM node).
func newLabVMExecCmd() *cobra.Command {
	var socket string
	c := &cobra.Command{
		Use:     "vm-exec --socket S -- CMD [ARG...]",
		Short:   "Run a command in a lab guest (lab exec does this for a VM node)",
		Example: "  linerate lab vm-exec --socket /run/linerate/lab/p.vm/b/exec.sock -- ethtool -l a",
		Hidden:  true,
		Args:    argsWith(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var env []string
			for _, kv := range os.Environ() {
				if strings.HasPrefix(kv, "LINERATE_") || strings.HasPrefix(kv, "TERM=") {
					env = append(env, kv)
				}
			}
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			code, err := vm.Client{Socket: socket}.Exec(context.Background(), args, env, os.Stdin, os.Stdout, os.Stderr, sigs)
			if err != nil && code == 0 {
				return err
			}
			if err != nil {
				// The guest could not run it (127: not found, 126: not
				// runnable), as a shell says.
				fmt.Fprintf(os.Stderr, "linerate: %v\n", err)
			}
			os.Exit(code)
			return nil
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "the guest supervisor's socket")
	c.Flags().SetInterspersed(false)
	return c
}
