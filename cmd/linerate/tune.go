package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"linerate/diagnose"
	"linerate/internal/usage"
	"linerate/report"
	"linerate/source"
	"linerate/source/tree"
	"linerate/tune"
)

// tuneStateDirEnv overrides the default state directory (tests point it at a
// temporary directory).
const tuneStateDirEnv = "LINERATE_STATE_DIR"

// tuneKillAfterEnv is a test hook: `tune apply` SIGKILLs itself right after
// its N-th change, before the journal marks it applied, so tests can prove
// that rollback restores a half-applied transaction.
const tuneKillAfterEnv = "LINERATE_TUNE_KILL_AFTER"

// defaultTuneStateDir is the default of --state-dir: $LINERATE_STATE_DIR,
// else tune's own.
func defaultTuneStateDir() string {
	if d := os.Getenv(tuneStateDirEnv); d != "" {
		return d
	}
	return tune.DefaultStateDir
}

// tuneLockWait bounds the wait for another linerate changing the system.
const tuneLockWait = 30 * time.Second

// tuneOptions are the flags of tune's subcommands (but auto).
type tuneOptions struct {
	sets     []string
	findings string
	force    bool
	plan     string
	out      string
	scope    string
	netns    string
	stateDir string
	json     bool
	last     bool
	forget   bool
	rootDir  string
	binary   string
	same     bool
	target   string
	boot     bool
	// persisted is reapply's --plan: the same flag name as plan's and
	// apply's, with another default.
	persisted string
}

func newTuneCmd() *cobra.Command {
	o := &tuneOptions{}
	c := &cobra.Command{
		Use:   "tune",
		Short: "Change NIC, queue, IRQ, sysctl and CPU settings as one reversible transaction",
		Long: `tune turns fixes into changes: 'plan' shows each change with the value the
system holds now and the new one, 'apply' makes them as one transaction
(journal of the old values on disk first, every change read back, all
restored on any failure), 'rollback' restores the journal exactly, also
after an apply killed half way, 'status' checks that applied values still
hold, and 'persist' makes them survive reboot.

Items are KIND:TARGET=VALUE. Kinds:
` + wrapWords(strings.Join(appliedKinds(), ", ")+".", 72) + `
boot items (cmdline.txt, config.txt, grub) are printed as the exact edit
to make, or, with --boot, made to the file as a journalled change that
rollback restores; bench items are advice for whoever runs the
measurement. See docs/tune.md for each kind's targets and values.`,
		Example: `  linerate tune plan --set rps:eth1/rx-0=1-3 --set coalesce:eth0=rx-usecs=100,rx-frames=10
  linerate diagnose --json > findings.json && linerate tune plan --findings findings.json
  linerate tune apply --set irq-affinity:41=1 --set sysctl:net.core.netdev_max_backlog=4096
  linerate tune status
  linerate tune rollback`,
	}
	o.addSubcommands(c)
	return c
}

func newTunePlanCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "plan",
		Short: "Show each change with its current and new value; change nothing",
		Long: `plan checks every item against the system (the target exists, the value
parses, the driver supports the setting) and prints each change with the
value read now and the new one. Changes that reset a link (rings,
channels, MTU on a physical NIC) are marked. Boot items are printed as the
exact edit to make. Fixes from --findings that this system cannot take are
listed as skipped, with the reason; an explicit --set that cannot be done
is an error.`,
		Example: `  linerate tune plan --set rps:eth1/rx-0=1-3 --set sysctl:net.core.netdev_max_backlog=4096
  linerate tune plan --set 'coalesce:eth0=rx-usecs=100,rx-frames=10' --set irq-affinity:41=1
  linerate tune plan --set irq-affinity:eth0=1-3            # each IRQ of eth0 on one of CPUs 1-3, found by name
  linerate tune plan --set irq-affinity:eth0/rx-0=1 --same --set irq-affinity:eth1=2-3
  linerate tune plan --findings findings.json -o plan.json
  linerate tune plan --netns lab-r1 --set rps:eth0/rx-*=1-3 --json`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.runPlan,
	}
}

func newTuneApplyCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "apply",
		Short: "Apply a plan as one transaction, journalled and read back",
		Long: `apply prints the plan, writes the journal of the old values to disk, then
makes each change and reads it back. If any change fails (or the command
is interrupted), every change already made is restored, newest first, and
nothing is left changed. 'linerate tune rollback' undoes an apply later;
'linerate tune persist' makes it survive reboot.`,
		Example: `  linerate tune apply --set rps:eth1/rx-0=3 --set irq-affinity:41=1
  linerate tune apply --plan plan.json
  linerate tune apply --boot --set boot:cmdline.txt=pci=pcie_bus_perf   # edit the file, journalled; active after reboot
  linerate tune apply --plan /etc/linerate/tune-plan.json --scope eth1   # what the boot unit runs
  linerate tune apply --netns lab-r1 --set sysctl:net.ipv4.ip_forward=1`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.runApply,
	}
}

func newTuneRollbackCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rollback",
		Short: "Restore every journalled change exactly, newest first",
		Long: `rollback restores the old values the journal holds, newest transaction
first, and removes each transaction from the journal once all of it is
restored. A transaction whose apply was killed half way is restored too:
every change that may have happened is put back. A transaction from
before the last boot, or in a network namespace that no longer exists, is
dropped: its changes are gone already.`,
		Example: `  linerate tune rollback
  linerate tune rollback --last       # only the newest transaction
  linerate tune rollback --forget     # drop the journal without restoring`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.runRollback,
	}
}

func newTuneStatusCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the applied changes and whether the live values still hold",
		Long: `status reads every change in the journal back from the system it was
made on. It exits 0 when every applied value still holds, 1 when one has
drifted (irqbalance, a driver reload or a person changed it) or a record
cannot be checked (made in another network namespace, or its namespace is
gone), so that a script or a monitor can run it.`,
		Example: "  linerate tune status\n  linerate tune status --json",
		Args:    argsWith(cobra.NoArgs),
		RunE:    o.runStatus,
	}
}

func newTunePersistCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "persist",
		Short: "Make the applied changes survive reboot (systemd unit, sysctl.d)",
		Long: `persist writes the applied host changes where the system applies them at
boot: sysctls to /etc/sysctl.d/90-linerate.conf; everything else to
/etc/linerate/tune-plan.json, applied by linerate-tune.service (box-wide
items) and by linerate-tune@IFACE.service, which is bound to the interface's
device so it runs again whenever the interface appears. Boot items are
printed as the edit to make by hand; persist does not write them ('tune
apply --boot' edits them, journalled). Changes made inside a network
namespace, with --netns or under 'ip netns exec', are not persisted, and
persist refuses to run from one.`,
		Example: `  linerate tune persist
  linerate tune persist --root-dir /tmp/root   # write under another root, no daemon-reload`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.runPersist,
	}
}

func newTuneReapplyCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reapply [IFACE|box]",
		Short: "Apply the persisted settings of an interface (or the box) again; what the hooks run",
		Long: `reapply applies again the items tune persist wrote: those of IFACE (its
offloads, rings, channels, coalescing, then its queues' RPS/XPS masks and
its IRQs by name), of the box (box-wide items), or, with no argument, the
box's and those of every interface present. Drivers forget rings,
coalescing and channels when they reset, and a re-created interface
starts with no RPS/XPS masks: the udev/systemd unit, OpenWrt's hotplug
scripts and tuned's script run this when an interface appears or comes
up. Values that hold are not touched, so it is safe to run again; each
change is journalled (tune rollback undoes it) and every run is logged to
reapply.log in the state directory.`,
		Example: `  linerate tune reapply eth0
  linerate tune reapply               # the box and every interface present
  linerate tune reapply --plan /etc/tuned/linerate/linerate-plan.json
  linerate tune reapply --netns lab-r1 --plan plan.json veth0`,
		Args: argsWith(cobra.MaximumNArgs(1)),
		RunE: o.runReapply,
	}
}

func newTuneUnpersistCmd(o *tuneOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "unpersist",
		Short: "Remove what persist wrote; live values stay until rollback",
		Example: `  linerate tune unpersist
  linerate tune unpersist --root-dir /tmp/root`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.runUnpersist,
	}
}

// addSubcommands adds tune's subcommands to c, each with its flags bound to o,
// and auto, with its own.
func (o *tuneOptions) addSubcommands(c *cobra.Command) {
	plan, apply, rollback := newTunePlanCmd(o), newTuneApplyCmd(o), newTuneRollbackCmd(o)
	status, persist, unpersist := newTuneStatusCmd(o), newTunePersistCmd(o), newTuneUnpersistCmd(o)
	reapply := newTuneReapplyCmd(o)
	reapply.Flags().StringVar(&o.persisted, "plan", "/etc/linerate/tune-plan.json", "the persisted plan file")
	reapply.Flags().StringVar(&o.netns, "netns", "", "re-apply in the named network namespace (/var/run/netns/NAME)")
	reapply.Flags().BoolVar(&o.json, "json", false, "print what was done as JSON")
	defState := defaultTuneStateDir()
	for _, c := range []*cobra.Command{plan, apply} {
		f := c.Flags()
		f.StringArrayVar(&o.sets, "set", nil, "a change as KIND:TARGET=VALUE, e.g. rps:eth1/rx-0=1-3 (repeatable)")
		f.StringVar(&o.findings, "findings", "", "take the fixes of `linerate diagnose --json` output in this file (- for stdin)")
		f.BoolVar(&o.force, "force", false, "take --findings made from another machine (a capture someone sent) all the same")
		f.StringVar(&o.plan, "plan", "", "take the items of a plan file written by 'tune plan -o'")
		f.StringVar(&o.scope, "scope", "", "keep only the items of one interface (IFACE) or the box-wide ones (box)")
		f.StringVar(&o.netns, "netns", "", "change the named network namespace (/var/run/netns/NAME) instead of the host")
		f.BoolVar(&o.json, "json", false, "print the result as JSON")
		f.BoolVar(&o.boot, "boot", false, "edit the boot files for boot items (cmdline.txt, config.txt, grub: /etc/default/grub), journalled; without it they are printed as advice")
		f.BoolVar(&o.same, "same", false, "irq-affinity:IFACE=CPUS puts every IRQ of IFACE on all of CPUS (default: one per CPU, in turn)")
	}
	plan.Flags().StringVarP(&o.out, "output", "o", "", "also save the plan's items to this file, for 'tune apply --plan'")
	for _, c := range []*cobra.Command{apply, rollback, status, persist, reapply} {
		c.Flags().StringVar(&o.stateDir, "state-dir", defState, "where the journal lives (its journal/ subdirectory); $"+tuneStateDirEnv+" sets the default")
	}
	status.Flags().BoolVar(&o.json, "json", false, "print the status as JSON")
	rollback.Flags().BoolVar(&o.last, "last", false, "restore only the newest transaction")
	rollback.Flags().BoolVar(&o.forget, "forget", false, "remove the journal without restoring anything")
	for _, c := range []*cobra.Command{persist, unpersist, status} {
		c.Flags().StringVar(&o.rootDir, "root-dir", "/", "the directory standing for / (systemctl daemon-reload runs only for /)")
	}
	persist.Flags().StringVar(&o.target, "target", "", "how the box re-applies: "+strings.Join(tune.Targets(), ", ")+" (default: openwrt where /etc/openwrt_release exists, else systemd)")
	status.Flags().StringVar(&o.target, "target", "", "also check the items persisted for this target under --root-dir (default: every target that has files there)")
	persist.Flags().StringVar(&o.binary, "binary", "", "the linerate the boot units run (default: this executable)")
	c.AddCommand(plan, apply, rollback, status, persist, unpersist, reapply, newTuneAutoCmd())
}

// buildPlan builds the plan the --set, --findings, --plan and --scope flags
// ask for.
// appliedKinds are the item kinds tune changes, from its builders: the
// advice kinds (boot, bench) are said apart.
func appliedKinds() []string {
	var out []string
	for _, k := range tune.Kinds() {
		if !diagnose.FixKind(k).Advice() {
			out = append(out, k)
		}
	}
	return out
}

// wrapWords breaks s into lines of at most width columns, between words.
func wrapWords(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

func (o *tuneOptions) buildPlan(sys tune.System) (*tune.Plan, error) {
	var set []tune.Item
	for _, s := range o.sets {
		it, err := tune.ParseItem(s)
		if err != nil {
			return nil, usage.Flags(err, map[string]string{"Item": "--set"})
		}
		if o.same {
			it = tune.SameCPUs(it)
		}
		set = append(set, it)
	}
	if o.plan != "" {
		pf, err := readTuneFile("--plan", o.plan, tune.ReadPlanFile)
		if err != nil {
			return nil, err
		}
		if pf.Netns != "" && pf.Netns != o.netns {
			return nil, usage.Errorf("--plan %s is for netns %s: add --netns %s", o.plan, pf.Netns, pf.Netns)
		}
		set = append(set, pf.Items...)
	}
	var fixes []tune.Item
	if o.findings != "" {
		found, err := readTuneFile("--findings", o.findings, tune.ReadFindings)
		if err != nil {
			return nil, err
		}
		if err := o.findingsHere(found.Origin); err != nil {
			return nil, err
		}
		fixes = tune.ItemsFromFindings(found.Findings)
	}
	if len(o.sets) == 0 && o.plan == "" && o.findings == "" {
		return nil, usage.Errorf("nothing to plan: give --set KIND:TARGET=VALUE, --findings FILE or --plan FILE")
	}
	if o.scope != "" {
		set, fixes = tune.Scope(set, o.scope), tune.Scope(fixes, o.scope)
	}
	return tune.PlanItems(sys, set, fixes)
}

// findingsHere refuses findings made from another machine (a capture
// someone sent, diagnose run elsewhere) unless --force: IRQ numbers,
// interface names and queue counts don't carry across machines.
func (o *tuneOptions) findingsHere(from *diagnose.Origin) error {
	if from == nil || o.force {
		return nil
	}
	host, _ := os.Hostname()
	here := diagnose.Origin{Host: host, MachineID: source.MachineID()}
	if from.SameMachine(here) {
		return nil
	}
	return usage.Errorf("--findings %s: made from %s, and this is host %s: IRQ numbers, interface names and queues don't carry across machines; run diagnose here, or add --force to plan them anyway",
		o.findings, from, host)
}

// readTuneFile opens a file ("-": stdin) and parses it; a missing file is
// bad input naming it.
// tuneFileMax bounds a findings or plan file: thousands of findings are
// a few hundred KiB.
const tuneFileMax = 16 << 20

func readTuneFile[T any](flag, name string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	var r io.Reader = io.LimitReader(os.Stdin, tuneFileMax)
	if name != "-" {
		// A file someone sent: a regular file of bounded size, read without
		// blocking (docs/security.md), not a pipe that waits for a writer.
		b, err := tree.ReadNamed(name, tuneFileMax)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return zero, usage.Errorf("%s %s: %w", flag, name, err)
		}
		r = bytes.NewReader(b)
	}
	v, err := parse(r)
	if err != nil {
		return zero, usage.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// open opens the system the flags name, for boot edits with --boot.
func (o *tuneOptions) open() (tune.System, error) {
	if o.boot && o.netns != "" {
		return nil, usage.Errorf("--boot edits the host's boot files; it does not go with --netns")
	}
	sys, err := tune.Open(o.netns)
	if err != nil || !o.boot {
		return sys, err
	}
	return tune.WithBoot(sys), nil
}

func (o *tuneOptions) runPlan(cmd *cobra.Command, _ []string) error {
	sys, err := o.open()
	if err != nil {
		return err
	}
	defer sys.Close()
	p, err := o.buildPlan(sys)
	if err != nil {
		return err
	}
	if o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return usage.Errorf("-o: %w", err)
		}
		werr := tune.WritePlanFile(f, tune.PlanFile{Netns: p.Netns, Items: p.Items})
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("write plan %s: %w", o.out, err)
		}
	}
	if o.json {
		return report.JSON(cmd.OutOrStdout(), report.TunePlanDoc(p))
	}
	return report.TunePlan(cmd.OutOrStdout(), p)
}

func (o *tuneOptions) runApply(cmd *cobra.Command, _ []string) error {
	store := tune.NewStore(o.stateDir)
	unlock, err := store.Lock(tuneLockWait)
	if err != nil {
		return err
	}
	defer unlock()
	sys, err := o.open()
	if err != nil {
		return err
	}
	defer sys.Close()
	if _, err := store.DropStale(sys); err != nil {
		return err
	}
	p, err := o.buildPlan(sys)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !o.json {
		if err := report.TunePlan(out, p); err != nil {
			return err
		}
	}
	tx, err := store.Begin(sys, p)
	if err != nil {
		return err
	}
	if s := os.Getenv(tuneKillAfterEnv); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 {
			return usage.Errorf("$%s=%q: want a number of changes, 1 or more", tuneKillAfterEnv, s)
		}
		tx.AfterChange = func(n int) {
			if n == k {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	}
	if err := tx.Apply(cmd.Context()); err != nil {
		return err
	}
	if o.json {
		return report.JSON(out, tx.Record())
	}
	report.TuneApplied(out, tx.Record(), store.Dir, stateDirFlag(o.stateDir))
	return nil
}

// stateDirFlag is " --state-dir DIR" for the hints a command prints when
// its journal is not the default one, so that the hint works as printed.
func stateDirFlag(dir string) string {
	if dir == "" || filepath.Clean(dir) == filepath.Clean(tune.DefaultStateDir) {
		return ""
	}
	if strings.ContainsAny(dir, " \t'\"$\\`;&|<>()*?[]{}~!#") {
		return " --state-dir '" + strings.ReplaceAll(dir, "'", `'\''`) + "'"
	}
	return " --state-dir " + dir
}

func (o *tuneOptions) runRollback(cmd *cobra.Command, _ []string) error {
	store := tune.NewStore(o.stateDir)
	unlock, err := store.Lock(tuneLockWait)
	if err != nil {
		return err
	}
	defer unlock()
	res, err := store.RollbackAll(cmd.Context(), tune.Open, o.last, o.forget)
	report.TuneRolledBack(cmd.OutOrStdout(), res)
	if err != nil {
		return fmt.Errorf("rollback incomplete, the journal keeps what is left: %w", err)
	}
	return nil
}

func (o *tuneOptions) runStatus(cmd *cobra.Command, _ []string) error {
	sts, err := tune.NewStore(o.stateDir).StatusAll(tune.Open)
	if err != nil {
		return err
	}
	if o.json {
		err = report.JSON(cmd.OutOrStdout(), sts)
	} else {
		err = report.TuneStatus(cmd.OutOrStdout(), sts)
	}
	if err != nil {
		return err
	}
	if !o.json {
		for _, st := range sts {
			for _, e := range st.Entries {
				if e.Renumbered != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "renumbered: %s\n", e.Renumbered)
				}
				if e.BootState != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "boot %s %s: %s\n", e.Target, e.To, e.BootState)
				}
			}
		}
		if err := o.printPersisted(cmd.OutOrStdout()); err != nil {
			return err
		}
	}
	// As tuned-adm verify does: a script or a monitor learns from the exit
	// status that the tuning no longer holds.
	if n := tune.Drifted(sts); n > 0 {
		return fmt.Errorf("tune status: %d applied change%s no longer hold%s", n, map[bool]string{true: "", false: "s"}[n == 1], map[bool]string{true: "s", false: ""}[n == 1])
	}
	for _, st := range sts {
		if st.Err != "" {
			return fmt.Errorf("tune status: %s cannot be checked: %s", st.Record.ID, st.Err)
		}
	}
	return nil
}

func (o *tuneOptions) runPersist(cmd *cobra.Command, _ []string) error {
	store := tune.NewStore(o.stateDir)
	recs, err := store.List()
	if err != nil {
		return err
	}
	bin := o.binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find this executable: %w", err)
		}
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return usage.Errorf("--binary: %w", err)
	}
	stateDir, err := filepath.Abs(o.stateDir)
	if err != nil {
		return usage.Errorf("--state-dir: %w", err)
	}
	here, err := tune.Open("")
	if err != nil {
		return err
	}
	defer here.Close()
	res, err := tune.Persist(recs, tune.PersistOptions{Root: o.rootDir, Binary: bin, StateDir: stateDir, Target: o.target, Here: here})
	if err != nil {
		return usage.Flags(err, map[string]string{"Target": "--target"})
	}
	out := cmd.OutOrStdout()
	report.TunePersisted(out, res)
	for _, c := range res.Conflicts {
		fmt.Fprintf(out, "CONFLICT: %s\n", c)
	}
	for _, n := range res.Next {
		fmt.Fprintf(out, "next: %s\n", n)
	}
	return nil
}

func (o *tuneOptions) runReapply(cmd *cobra.Command, args []string) error {
	scope := ""
	if len(args) == 1 {
		scope = args[0]
	}
	pf, err := readTuneFile("--plan", o.persisted, tune.ReadPlanFile)
	if err != nil {
		return err
	}
	store := tune.NewStore(o.stateDir)
	unlock, err := store.Lock(tuneLockWait)
	if err != nil {
		return err
	}
	defer unlock()
	sys, err := tune.Open(o.netns)
	if err != nil {
		return err
	}
	defer sys.Close()
	if _, err := store.DropStale(sys); err != nil {
		return err
	}
	steps, err := tune.Reapply(cmd.Context(), store, sys, pf.Items, scope)
	lines := make([]string, 0, len(steps)+1)
	for _, st := range steps {
		lines = append(lines, st.String())
	}
	if err != nil {
		lines = append(lines, err.Error())
	}
	if len(steps) == 0 && err == nil {
		lines = append(lines, "reapply "+scope+": nothing persisted for it in "+o.persisted)
	}
	if lerr := store.Log(lines...); lerr != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "linerate: reapply.log: %v\n", lerr)
	}
	if o.json {
		if jerr := report.JSON(cmd.OutOrStdout(), steps); jerr != nil {
			return jerr
		}
	} else {
		for _, l := range lines[:len(steps)] {
			fmt.Fprintln(cmd.OutOrStdout(), l)
		}
	}
	return err
}

// printPersisted checks the items persisted under --root-dir against the
// live host, for tune status: what the next boot or re-apply would do.
func (o *tuneOptions) printPersisted(w io.Writer) error {
	sys, err := tune.Open("")
	if err != nil {
		return err
	}
	defer sys.Close()
	checks, err := tune.CheckPersisted(sys, o.rootDir, o.target)
	report.TuneHeld(w, o.rootDir, checks)
	return usage.Flags(err, map[string]string{"Target": "--target"})
}

func (o *tuneOptions) runUnpersist(cmd *cobra.Command, _ []string) error {
	removed, err := tune.Unpersist(o.rootDir)
	out := cmd.OutOrStdout()
	for _, p := range removed {
		fmt.Fprintf(out, "removed %s\n", p)
	}
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintln(out, "nothing to remove: tune persist has not written anything")
	}
	return nil
}
