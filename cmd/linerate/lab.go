//go:build !small

package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"linerate/internal/usage"
	"linerate/lab"
	"linerate/report"
	"linerate/wire"
)

// labOptions are the flags every lab command shares.
type labOptions struct{ stateDir string }

func (o *labOptions) dir() lab.Dir { return lab.Dir(o.stateDir) }

// labUpOptions are the flags of lab up.
type labUpOptions struct {
	*labOptions
	name   string
	ports  int
	mtu    int
	queues int
	rate   string
	subnet string
	serve  bool
	cpus   string
	vm     labVMOptions
}

func newLabCmd() *cobra.Command {
	o := &labOptions{}
	c := &cobra.Command{
		Use:   "lab",
		Short: "Build virtual labs of network namespaces: pair, router, star",
		Long: `lab builds topologies of network namespaces joined by veth links, to try
linerate (and a tuning) before touching a real box:

  pair    a — b, two hosts over one link
  router  lan — router — wan: the router forwards and NATs out of wan
          (nftables masquerade, conntrack); lan and wan route through it
  star    box — peer1..peerN, each peer on its own subnet (--ports N)

Namespaces are named lr-LAB-NODE. Each interface is named after the node at
its other end. Link k gets the k-th subnet of --subnet (default
10.231.0.0/16: link k is 10.231.k.0/24). Inside a node (lab exec), the other
nodes' names resolve to their addresses. With --serve, lab up starts an
agent (linerate serve) in every node, so every node is reached as a real
host is. See docs/lab.md.`,
		Example: `  sudo linerate lab up router --name demo --rate 1G
  sudo linerate lab exec demo lan -- ping -c 3 wan
  linerate lab list
  sudo linerate lab down demo`,
	}
	c.PersistentFlags().StringVar(&o.stateDir, "state-dir", string(lab.DefaultDir()),
		"directory of lab state files (env "+lab.EnvDir+")")
	c.AddCommand(newLabUpCmd(o), newLabDownCmd(o), newLabListCmd(o), newLabAddrCmd(o), newLabExecCmd(o),
		newLabRebootCmd(o), newLabImageCmd(), newLabSuperviseCmd(), newLabGuestCmd(), newLabVMExecCmd())
	return c
}

// labSpecFlags are the flags of lab up that set each field of a lab.Spec.
var labSpecFlags = map[string]string{"Ports": "--ports", "MTU": "--mtu", "Queues": "--queues", "Rate": "--rate", "Subnet": "--subnet",
	"VM": "--vm", "NIC": "--nic", "Image": "--vm-image", "CPUs": "--vm-cpus", "MemoryMB": "--vm-memory", "BootTimeout": "--vm-boot-timeout"}

func newLabUpCmd(common *labOptions) *cobra.Command {
	o := &labUpOptions{labOptions: common}
	c := &cobra.Command{
		Use:   "up TOPOLOGY",
		Short: "Build a lab (pair, router or star) and print its address plan",
		Example: `  sudo linerate lab up router                      # lab "router": lan, router, wan
  sudo linerate lab up router --name demo --rate 1G --queues 2
  sudo linerate lab up star --ports 5 --mtu 9000
  sudo linerate lab up pair --name p --subnet 192.168.77.0/24
  sudo linerate lab up router --name demo --serve    # and an agent (linerate serve) in every node
  sudo linerate lab up router --name demo --serve --cpus 0   # agents pinned to CPU0: the router's receive work piles up there
  sudo linerate lab exec demo lan -- linerate bench udp --to wan   # reaches wan's agent by name
  sudo linerate lab up pair --name p --vm b --nic e1000e --serve   # b is a QEMU guest with an e1000e NIC
  sudo linerate lab up pair --name v --vm b --nic virtio --queues 4  # virtio-net, 4 queues, RSS
  sudo linerate lab up router --name r --vm router --vm-image debian  # a Debian guest that reboots`,
		Args: argsWith(cobra.ExactArgs(1)),
		RunE: o.run,
	}
	f := c.Flags()
	f.StringVar(&o.name, "name", "", "name of the lab (lower-case letters, digits, '-'; default: the topology)")
	f.IntVar(&o.ports, "ports", 0, fmt.Sprintf("number of peers of a star, 1 to %d (default 5)", lab.MaxPorts))
	f.IntVar(&o.mtu, "mtu", 0, fmt.Sprintf("MTU of every link, %d to %d (default: the kernel's, 1500)", lab.MinMTU, lab.MaxMTU))
	f.IntVar(&o.queues, "queues", 1, fmt.Sprintf("rx and tx queues of each veth, 1 to %d", lab.MaxQueues))
	f.StringVar(&o.rate, "rate", "", "cap each direction of each link with a tbf qdisc, in bits/s: 100M, 1G, 2.5G (default: uncapped)")
	f.StringVar(&o.subnet, "subnet", lab.DefaultSubnet.String(), "IPv4 prefix to carve one subnet per link from")
	f.StringVar(&o.cpus, "cpus", "", "with --serve: pin every agent's sender and receiver threads to these CPUs (serve --cpus: \"0\", \"0-1\"), so that a flow's work piles up there")
	f.BoolVar(&o.serve, "serve", false, fmt.Sprintf("start an agent (linerate serve, port %d) in every node, with a secret in the state directory; lab down stops them", wire.DefaultPort))
	o.vm.flags(f)
	return c
}

func (o *labUpOptions) run(cmd *cobra.Command, args []string) error {
	s, err := o.spec(cmd, args[0])
	if err != nil {
		return err
	}
	l, err := o.dir().Up(cmd.Context(), s)
	if err != nil {
		return usage.Flags(err, labSpecFlags)
	}
	w := cmd.OutOrStdout()
	if err := l.Describe(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "run a command in a node: linerate lab exec %s %s -- CMD...; remove it: linerate lab down %s\n",
		l.Spec.Name, l.Nodes[0].Name, l.Spec.Name)
	return nil
}

// spec is the lab lab up's flags ask for; lab.Dir.Up checks the rest.
func (o *labUpOptions) spec(cmd *cobra.Command, topology string) (s lab.Spec, err error) {
	s = lab.Spec{Topology: topology, Name: o.name, Ports: o.ports, MTU: o.mtu, Queues: o.queues}
	if s.Name == "" {
		s.Name = s.Topology
	}
	if s.Topology == lab.Star && !cmd.Flags().Changed("ports") {
		s.Ports = 5
	}
	if cmd.Flags().Changed("mtu") && s.MTU == 0 {
		return s, usage.Errorf("--mtu 0: want %d to %d", lab.MinMTU, lab.MaxMTU)
	}
	if cmd.Flags().Changed("queues") && s.Queues == 0 {
		return s, usage.Errorf("--queues 0: want 1 to %d", lab.MaxQueues)
	}
	if o.rate != "" {
		if s.Rate, err = lab.ParseRate(o.rate); err != nil {
			return s, usage.Errorf("--rate: %w", err)
		}
	}
	if o.subnet != "" {
		if s.Subnet, err = netip.ParsePrefix(o.subnet); err != nil {
			return s, usage.Errorf("--subnet %q: want an IPv4 prefix such as %s", o.subnet, lab.DefaultSubnet)
		}
	}
	switch {
	case o.serve:
		if s.Serve, err = o.agents(s.Ports); err != nil {
			return s, err
		}
	case o.cpus != "":
		return s, usage.Errorf("--cpus pins the agents: it goes with --serve")
	}
	s.VM, err = o.vm.spec(cmd)
	return s, err
}

// agents is what --serve starts in every node: this linerate's serve,
// with the lab's secret, taking a flow from every peer of a star of
// ports, pinned to --cpus.
func (o *labUpOptions) agents(ports int) (*lab.Serve, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--serve: the agents run this linerate: %w", err)
	}
	cpus, err := parseCPUs(o.cpus)
	if err != nil {
		return nil, err
	}
	return &lab.Serve{Port: wire.DefaultPort, CPUs: cpus, Command: func(_, secretFile string) *exec.Cmd {
		args := []string{"serve", "--token-file", secretFile}
		if ports > serveMaxClients {
			// A star's box receives a flow from every peer at once.
			args = append(args, "--max-clients", strconv.Itoa(ports))
		}
		if len(cpus) > 0 {
			args = append(args, "--cpus", o.cpus)
		}
		return exec.Command(self, args...)
	}}, nil
}

func newLabDownCmd(o *labOptions) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "down [NAME | --all]",
		Short: "Remove a lab: exactly what its lab up created, also after a crash",
		Example: `  sudo linerate lab down demo
  sudo linerate lab down --all`,
		Args: argsWith(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			switch {
			case all && len(args) > 0:
				return usage.Errorf("lab down: name a lab or give --all, not both")
			case all:
				done, err := o.dir().DownAll()
				for _, n := range done {
					fmt.Fprintf(w, "lab %s is down\n", n)
				}
				if err == nil && len(done) == 0 {
					fmt.Fprintln(w, "no labs")
				}
				return err
			case len(args) == 0:
				return usage.Errorf("lab down: name a lab (see linerate lab list) or give --all")
			}
			if err := o.dir().Down(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(w, "lab %s is down\n", args[0])
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "remove every lab")
	return c
}

func newLabListCmd(o *labOptions) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List labs with their topology, status, nodes, subnet and agents",
		Example: `  linerate lab list
  linerate lab list --json`,
		Args: argsWith(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			labs, err := o.dir().List()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if labs == nil {
					labs = []*lab.Lab{}
				}
				return report.JSON(w, labs)
			}
			if len(labs) == 0 {
				fmt.Fprintln(w, "no labs (sudo linerate lab up router makes one)")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTOPOLOGY\tSTATUS\tNODES\tSUBNET\tAGENTS\tGUESTS")
			for _, l := range labs {
				fmt.Fprintln(tw, l.Summary())
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the labs' full state as JSON")
	return c
}

func newLabAddrCmd(o *labOptions) *cobra.Command {
	var from string
	c := &cobra.Command{
		Use:   "addr NAME NODE",
		Short: "Print a node's addresses, one a line (or the one --from another node reaches)",
		Example: `  linerate lab addr demo wan                 # 10.231.2.2
  linerate lab addr demo router              # 10.231.1.1 and 10.231.2.1
  linerate lab addr demo router --from wan   # 10.231.2.1`,
		Args: argsWith(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := o.dir().Load(args[0])
			if err != nil {
				return err
			}
			n, err := l.Node(args[1])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if from == "" {
				for _, a := range n.Addrs() {
					fmt.Fprintln(w, a)
				}
				return nil
			}
			if _, err := l.Node(from); err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			a, ok := l.Addr(from, n.Name)
			if !ok {
				return usage.Errorf("--from %s: %s does not reach %s in lab %s", from, from, n.Name, l.Spec.Name)
			}
			fmt.Fprintln(w, a)
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "print the address this node reaches NODE at")
	return c
}

func newLabExecCmd(o *labOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "exec NAME NODE [--] CMD [ARG...]",
		Short: "Run a command inside a lab node, where node names resolve to addresses",
		Long: `exec runs CMD inside NODE of lab NAME, as ip netns exec does: in the node's
network namespace, with /sys showing the node's interfaces and /etc/hosts
naming the lab's nodes (so "ping wan" works), and with LINERATE_LAB and
LINERATE_LAB_NODE set. In a lab up with --serve, LINERATE_TOKEN holds the
agents' secret, so "linerate bench udp --to wan" reaches wan's agent. Its
exit status is the command's. linerate's own flags
(--state-dir) go before NAME; everything after NODE belongs to CMD.`,
		Example: `  sudo linerate lab exec demo lan -- ping -c 3 wan
  sudo linerate lab exec demo router -- linerate inspect
  sudo linerate lab exec demo wan -- iperf3 -s -1`,
		Args: argsWith(cobra.MinimumNArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error { return labExec(cmd, o, args) },
	}
	// Everything after NODE belongs to the command, flags included.
	c.Flags().SetInterspersed(false)
	return c
}

// labExec runs lab exec's command in its node and waits for it, passing
// on a SIGTERM; a command that fails exits linerate with its status.
func labExec(cmd *cobra.Command, o *labOptions, args []string) error {
	l, err := o.dir().Load(args[0])
	if err != nil {
		return err
	}
	if _, err := l.Node(args[1]); err != nil {
		return err
	}
	argv := args[2:]
	if argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return usage.Errorf("lab exec %s %s: no command after --", args[0], args[1])
	}
	c := exec.Command(argv[0], argv[1:]...)
	if l.IsVM(args[1]) {
		// The guest looks the command up on its own PATH.
		c = &exec.Cmd{Path: argv[0], Args: argv}
	} else if errors.Is(c.Err, exec.ErrNotFound) {
		return usage.Errorf("lab exec: %q not found in $PATH", argv[0])
	}
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := l.Start(args[1], c); err != nil {
		return err
	}
	// Ctrl-C reaches the command itself (same process group); a
	// SIGTERM sent to linerate alone is passed on.
	done := make(chan struct{})
	go func() {
		select {
		case <-cmd.Context().Done():
			c.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	err = c.Wait()
	close(done)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		// The command ran and failed: exit with its status, as ip
		// netns exec does (128+N when killed by signal N).
		code := exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		os.Exit(code)
	}
	return err
}
