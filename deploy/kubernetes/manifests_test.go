// Package kubernetes holds no Go: its test checks the manifests beside
// it.
package kubernetes

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"linerate/plan"
)

// objects is what kustomize build makes of this directory, each object
// decoded strictly into its Kubernetes API type.
type objects struct {
	ns        *corev1.Namespace
	secret    *corev1.Secret
	configMap *corev1.ConfigMap
	service   *corev1.Service
	ds        *appsv1.DaemonSet
	job       *batchv1.Job
}

// build runs kustomize (its library: what kubectl apply -k runs) over the
// directory and decodes every object it makes with yaml.UnmarshalStrict:
// a field the API type does not have, or one given twice, fails.
func build(t *testing.T) objects {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), ".")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	o := objects{ns: &corev1.Namespace{}, secret: &corev1.Secret{}, configMap: &corev1.ConfigMap{}, service: &corev1.Service{},
		ds: &appsv1.DaemonSet{}, job: &batchv1.Job{}}
	byKind := map[string]any{"Namespace": o.ns, "Secret": o.secret, "ConfigMap": o.configMap, "Service": o.service,
		"DaemonSet": o.ds, "Job": o.job}
	made := map[string]bool{}
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		into, ok := byKind[r.GetKind()]
		if !ok || made[r.GetKind()] {
			t.Fatalf("kustomize made a %s (%s), which the test does not know or had already", r.GetKind(), r.GetName())
		}
		made[r.GetKind()] = true
		if err := yaml.UnmarshalStrict(b, into); err != nil {
			t.Errorf("%s %s: %v", r.GetKind(), r.GetName(), err)
		}
		if ns := r.GetNamespace(); r.GetKind() != "Namespace" && ns != "linerate" {
			t.Errorf("%s %s is in namespace %q, not linerate", r.GetKind(), r.GetName(), ns)
		}
	}
	if len(made) != len(byKind) {
		t.Fatalf("kustomize made %v, want one of each of %v", made, slices.Sorted(maps.Keys(byKind)))
	}
	return o
}

// unitCapabilities are the capabilities the systemd unit grants serve
// (CapabilityBoundingSet), without the CAP_ prefix.
func unitCapabilities(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../packaging/linerate-serve.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapabilityBoundingSet="); ok {
			var caps []string
			for _, c := range strings.Fields(v) {
				caps = append(caps, strings.TrimPrefix(c, "CAP_"))
			}
			slices.Sort(caps)
			return caps
		}
	}
	t.Fatal("the unit has no CapabilityBoundingSet")
	return nil
}

// TestManifests: the kustomization builds, every object is a valid
// Kubernetes object of its kind, and they fit together as
// docs/kubernetes.md says: agents on the host network with the unit's
// capabilities and no others, the token from the Secret, Prometheus's
// annotations at the port serve --web listens on, a headless Service
// whose named port makes the _linerate._tcp SRV records and selects the
// agents, and a Job that runs the plan mounted from the ConfigMap, which
// names the agents through the Service's DNS name.
func TestManifests(t *testing.T) {
	o := build(t)

	pod := o.ds.Spec.Template
	if !pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("agents: hostNetwork %v, dnsPolicy %s", pod.Spec.HostNetwork, pod.Spec.DNSPolicy)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("agents: %d containers", len(pod.Spec.Containers))
	}
	serve := pod.Spec.Containers[0]
	sc := serve.SecurityContext
	var added []string
	for _, c := range sc.Capabilities.Add {
		added = append(added, string(c))
	}
	slices.Sort(added)
	if want := unitCapabilities(t); !slices.Equal(added, want) {
		t.Errorf("agents add capabilities %v, the unit grants %v", added, want)
	}
	if d := sc.Capabilities.Drop; len(d) != 1 || d[0] != "ALL" {
		t.Errorf("agents drop %v, want ALL", d)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Privileged != nil && *sc.Privileged {
		t.Errorf("agents may gain privileges: %+v", sc)
	}
	if serve.Image != "localhost/linerate:latest" || serve.Args[0] != "serve" {
		t.Errorf("agents run %s %v", serve.Image, serve.Args)
	}
	if l := serve.Resources.Limits.Memory(); l.IsZero() || serve.Resources.Requests.Memory().IsZero() || serve.Resources.Requests.Cpu().IsZero() {
		t.Errorf("agents' resources %+v", serve.Resources)
	}
	web := flagValue(serve.Args, "--web")
	port := map[string]int32{}
	for _, p := range serve.Ports {
		port[p.Name] = p.ContainerPort
	}
	if ann := pod.Annotations; ann["prometheus.io/scrape"] != "true" || ":"+ann["prometheus.io/port"] != web ||
		web != ":9464" || port["metrics"] != 9464 || port["linerate"] != 7557 {
		t.Errorf("agents: --web %q, annotations %v, ports %v", web, ann, port)
	}
	checkToken(t, "agents", serve, o.secret)

	svc := o.service.Spec
	if svc.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("the Service is not headless: clusterIP %q", svc.ClusterIP)
	}
	for k, v := range svc.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, the agents are labelled %v", k, v, pod.Labels)
		}
	}
	if len(svc.Ports) == 0 || svc.Ports[0].Name != "linerate" || svc.Ports[0].Protocol != corev1.ProtocolTCP || svc.Ports[0].Port != 7557 {
		t.Errorf("the Service's first port %+v: want linerate/TCP 7557 (_linerate._tcp)", svc.Ports)
	}

	// The Job's plan, from the ConfigMap, where the Job mounts it.
	run := o.job.Spec.Template.Spec.Containers[0]
	if run.Args[0] != "run" || o.job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("the Job runs %v, restart %s", run.Args, o.job.Spec.Template.Spec.RestartPolicy)
	}
	if run.SecurityContext.RunAsNonRoot == nil || !*run.SecurityContext.RunAsNonRoot || len(run.SecurityContext.Capabilities.Add) > 0 {
		t.Errorf("the controller runs with %+v: it needs no privilege", run.SecurityContext)
	}
	checkToken(t, "the Job", run, o.secret)
	var mount *corev1.VolumeMount
	for i := range run.VolumeMounts {
		if strings.HasPrefix(run.Args[1], run.VolumeMounts[i].MountPath+"/") {
			mount = &run.VolumeMounts[i]
		}
	}
	if mount == nil {
		t.Fatalf("the Job's plan %s is on no volume it mounts", run.Args[1])
	}
	var text string
	for _, v := range o.job.Spec.Template.Spec.Volumes {
		if v.Name == mount.Name && v.ConfigMap != nil && v.ConfigMap.Name == o.configMap.Name {
			text = o.configMap.Data[filepath.Base(run.Args[1])]
		}
	}
	pl, err := plan.Parse(run.Args[1], []byte(text))
	if err != nil {
		t.Fatalf("the Job's plan: %v", err)
	}
	fqdn := o.service.Name + "." + o.service.Namespace + ".svc.cluster.local"
	for _, h := range pl.Hosts {
		if !h.Discovered() || h.Reach.Name != fqdn && h.Reach.Name != "_linerate._tcp."+fqdn {
			t.Errorf("the plan's host %s is %s, not the Service's name %s", h.Name, h.Reach, fqdn)
		}
	}
}

// checkToken checks c takes $LINERATE_TOKEN from the Secret's token.
func checkToken(t *testing.T, what string, c corev1.Container, s *corev1.Secret) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "LINERATE_TOKEN" {
			if r := e.ValueFrom.SecretKeyRef; r == nil || r.Name != s.Name || r.Key != "token" {
				t.Errorf("%s: LINERATE_TOKEN from %+v, not the Secret %s's token", what, e.ValueFrom, s.Name)
			}
			if _, ok := s.StringData["token"]; !ok {
				t.Errorf("the Secret %s has no token", s.Name)
			}
			return
		}
	}
	t.Errorf("%s: no LINERATE_TOKEN", what)
}

// flagValue is the value of flag in args (--flag VALUE or --flag=VALUE).
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestManifestArgs: the agents' and the Job's command lines are ones
// linerate takes (every flag exists; --help stops before anything runs).
func TestManifestArgs(t *testing.T) {
	o := build(t)
	bin := filepath.Join(t.TempDir(), "linerate")
	if b, err := exec.Command("go", "build", "-o", bin, "../../cmd/linerate").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for _, args := range [][]string{o.ds.Spec.Template.Spec.Containers[0].Args, o.job.Spec.Template.Spec.Containers[0].Args} {
		if b, err := exec.Command(bin, append(slices.Clone(args), "--help")...).CombinedOutput(); err != nil {
			t.Errorf("linerate %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
}
