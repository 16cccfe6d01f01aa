package fleet

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/oob"
	"go.yaml.in/yaml/v3"
)

// The launch recipes: text a launcher runs to start one fleet member per host. They are
// pure functions of their options; every error they return is a usage error.

// SlurmOptions are the settings of an sbatch script (SlurmScript).
type SlurmOptions struct {
	Nodes     int      // hosts, one member each (-N)
	Pattern   string   // --pattern; "" is pairwise
	Time      string   // the job's time limit, Slurm's format; "" is 00:30:00
	Partition string   // "": the cluster's default partition
	Args      []string // more arguments for every member's `rdmabench fleet`
}

// DefaultSlurmTime is the time limit of an sbatch script that sets none.
const DefaultSlurmTime = "00:30:00"

// DefaultName is the name of the Kubernetes Job and Service that set none.
const DefaultName = "rdmabench-fleet"

// slurmTime is Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
var slurmTime = regexp.MustCompile(`^([0-9]+-[0-9]+(:[0-9]+){0,2}|[0-9]+(:[0-9]+){0,2}|UNLIMITED|INFINITE)$`)

// slurmPartition is one partition name or a comma-separated list of them.
var slurmPartition = regexp.MustCompile(`^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$`)

func (o SlurmOptions) withDefaults() SlurmOptions {
	if o.Pattern == "" {
		o.Pattern = pairs.Pairwise
	}
	if o.Time == "" {
		o.Time = DefaultSlurmTime
	}
	return o
}

// Check says what is wrong with o, as a usage error; nil when nothing is.
func (o SlurmOptions) Check() error {
	o = o.withDefaults()
	if o.Nodes < 2 {
		return fmt.Errorf("-N %d: a fleet needs at least 2 nodes", o.Nodes)
	}
	if _, err := pairs.ParsePattern(o.Pattern, o.Nodes); err != nil {
		return fmt.Errorf("--pattern: %w", err)
	}
	if !slurmTime.MatchString(o.Time) {
		return fmt.Errorf("--time %q: want Slurm's format, such as 30, 00:30:00 or 1-00:00:00", o.Time)
	}
	if o.Partition != "" && !slurmPartition.MatchString(o.Partition) {
		return fmt.Errorf("--partition %q: want a partition name (letters, digits, '_', '.', '-'), or a comma-separated list of them", o.Partition)
	}
	return checkArgs(o.Args)
}

// checkArgs refuses extra arguments that a script or a manifest could not carry whole.
func checkArgs(args []string) error {
	for _, a := range args {
		if strings.ContainsFunc(a, unicode.IsControl) {
			return fmt.Errorf("argument %q has a control character", a)
		}
	}
	return nil
}

// SlurmScript is an sbatch script that runs one fleet member on each of o.Nodes
// nodes: srun starts `rdmabench fleet` once per node, each member takes its rank and
// the world size from SLURM_PROCID and SLURM_NTASKS, and rank 0, the first host of the
// allocation, coordinates. A comment in it gives the mpirun line that starts the same
// fleet without Slurm.
func SlurmScript(o SlurmOptions) (string, error) {
	if err := o.Check(); err != nil {
		return "", err
	}
	o = o.withDefaults()
	fleetArgs := shellJoin(append([]string{"--pattern", o.Pattern}, o.Args...))
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("#!/bin/bash")
	p("#SBATCH --job-name=%s", DefaultName)
	p("#SBATCH --nodes=%d --ntasks-per-node=1", o.Nodes)
	p("#SBATCH --time=%s", o.Time)
	if o.Partition != "" {
		p("#SBATCH --partition=%s", o.Partition)
	}
	p("#")
	p("# rdmabench fleet, pattern %s, over %d nodes: one member per node. Submit with", o.Pattern, o.Nodes) // text: local (the command line)
	p("# `sbatch THIS_FILE`. Each member takes its rank and the world size from srun's")
	p("# SLURM_PROCID and SLURM_NTASKS; rank 0 runs on the first host of the allocation")
	p("# and coordinates the others over rdmabench's control protocol.")
	p("#")
	p("# Without Slurm, Open MPI's mpirun starts the same fleet, one member per host of")
	p("# its hostfile, the first of which coordinates:")
	p("#   mpirun -np %d --map-by node rdmabench fleet --coordinator FIRST_HOST %s", o.Nodes, fleetArgs)
	p("#")
	p("# The members share a token: export RDMABENCH_TOKEN before sbatch (srun passes the")
	p("# environment on), or give --token-file FILE on shared storage after -- .")
	p("")
	p("set -eu")
	p(`coordinator=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)`)
	p(`srun --ntasks-per-node=1 rdmabench fleet --coordinator "$coordinator" %s`, fleetArgs)
	return b.String(), nil
}

// shellSafe is what a POSIX shell takes as one word without quotes.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote makes s one shell word.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// K8sOptions are the settings of the Kubernetes manifests (K8sManifests).
type K8sOptions struct {
	Members   int    // pods, one per node (-n)
	Image     string // the container image, with rdmabench on its PATH
	Name      string // the Job's and the headless Service's name; "" is DefaultName
	Namespace string // "": the namespace kubectl applies to
	Pattern   string // --pattern; "" is pairwise
	// RDMAResource is a device plugin's resource each pod asks for, NAME[=COUNT]
	// (COUNT 1 when left out), such as rdma/rdma_shared_device_a=1; "": none.
	RDMAResource string
	// Network is the Multus network attachment(s) for the pods' RDMA interface, the
	// value of the k8s.v1.cni.cncf.io/networks annotation; "": none.
	Network string
	// HostNetwork runs the pods in their nodes' network namespace (and so with
	// dnsPolicy ClusterFirstWithHostNet, to still find each other by name).
	HostNetwork bool
	Port        int      // the coordinator's control port; 0 is rdmabench's (oob.DefaultPort)
	Args        []string // more arguments for every member's `rdmabench fleet`
}

// MultusAnnotation is the pod annotation that attaches Multus networks.
const MultusAnnotation = "k8s.v1.cni.cncf.io/networks"

// dnsLabel is an RFC 1123 label, which Kubernetes names of Services, Jobs, namespaces
// and pod hostnames must be.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// resourceName is an extended resource's name: a DNS subdomain prefix, a slash and a
// name (rdma/hca_shared_devices_a, nvidia.com/...).
var resourceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

func (o K8sOptions) withDefaults() K8sOptions {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Pattern == "" {
		o.Pattern = pairs.Pairwise
	}
	if o.Port == 0 {
		o.Port = oob.DefaultPort
	}
	return o
}

// ParseResource parses --rdma-resource NAME[=COUNT]: an extended resource's name
// (domain/name) and a count of at least 1 (1 when left out).
func ParseResource(s string) (name string, count int, err error) {
	name, c, hasCount := strings.Cut(s, "=")
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(c); err != nil || count < 1 {
			return "", 0, fmt.Errorf("--rdma-resource %q: the count %q is not a whole number of at least 1", s, c)
		}
	}
	if !resourceName.MatchString(name) {
		return "", 0, fmt.Errorf("--rdma-resource %q: want NAME=COUNT, NAME a device plugin's resource such as rdma/rdma_shared_device_a", s)
	}
	return name, count, nil
}

// Check says what is wrong with o, as a usage error; nil when nothing is.
func (o K8sOptions) Check() error {
	o = o.withDefaults()
	if o.Members < 2 {
		return fmt.Errorf("-n %d: a fleet needs at least 2 members", o.Members)
	}
	if o.Image == "" {
		return fmt.Errorf("--image is required: a container image with rdmabench on its PATH")
	}
	if strings.ContainsFunc(o.Image, unicode.IsSpace) || strings.ContainsFunc(o.Image, unicode.IsControl) {
		return fmt.Errorf("--image %q: an image reference has no spaces", o.Image)
	}
	// A pod's hostname is NAME-INDEX, itself a label of at most 63 characters.
	if longest := 63 - len("-"+strconv.Itoa(o.Members-1)); !dnsLabel.MatchString(o.Name) || len(o.Name) > longest {
		return fmt.Errorf("--name %q: want lower-case letters, digits and '-', starting and ending with a letter or digit, at most %d characters (pods are named NAME-INDEX)", o.Name, longest)
	}
	if o.Namespace != "" && (!dnsLabel.MatchString(o.Namespace) || len(o.Namespace) > 63) {
		return fmt.Errorf("--namespace %q: want lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters", o.Namespace)
	}
	if _, err := pairs.ParsePattern(o.Pattern, o.Members); err != nil {
		return fmt.Errorf("--pattern: %w", err)
	}
	if o.RDMAResource != "" {
		if _, _, err := ParseResource(o.RDMAResource); err != nil {
			return err
		}
	}
	if strings.ContainsFunc(o.Network, unicode.IsControl) {
		return fmt.Errorf("--network %q has a control character", o.Network)
	}
	if o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("--port %d: want a TCP port, 1 to 65535", o.Port)
	}
	return checkArgs(o.Args)
}

// Coordinator is where rank 0 of an Indexed Job's fleet listens: pod NAME-0 of the
// headless Service NAME, with the port when it is not rdmabench's default.
func (o K8sOptions) Coordinator() string {
	o = o.withDefaults()
	host := o.Name + "-0." + o.Name
	if o.Port != oob.DefaultPort {
		return host + ":" + strconv.Itoa(o.Port)
	}
	return host
}

// The manifests' shapes: the few fields of Kubernetes' Service and Job that the recipe
// sets, in Kubernetes' field names, so that the binary needs no Kubernetes library.
type (
	k8sMeta struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace,omitempty"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	k8sService struct {
		APIVersion string         `yaml:"apiVersion"`
		Kind       string         `yaml:"kind"`
		Metadata   k8sMeta        `yaml:"metadata"`
		Spec       k8sServiceSpec `yaml:"spec"`
	}
	k8sServiceSpec struct {
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []k8sServicePort  `yaml:"ports"`
	}
	k8sServicePort struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort int    `yaml:"targetPort"`
		Protocol   string `yaml:"protocol"`
	}
	k8sJob struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   k8sMeta    `yaml:"metadata"`
		Spec       k8sJobSpec `yaml:"spec"`
	}
	k8sJobSpec struct {
		CompletionMode string      `yaml:"completionMode"`
		Completions    int         `yaml:"completions"`
		Parallelism    int         `yaml:"parallelism"`
		BackoffLimit   int         `yaml:"backoffLimit"`
		Template       k8sTemplate `yaml:"template"`
	}
	k8sTemplate struct {
		Metadata k8sTemplateMeta `yaml:"metadata"`
		Spec     k8sPodSpec      `yaml:"spec"`
	}
	k8sTemplateMeta struct {
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	k8sPodSpec struct {
		Subdomain     string         `yaml:"subdomain"`
		RestartPolicy string         `yaml:"restartPolicy"`
		HostNetwork   bool           `yaml:"hostNetwork,omitempty"`
		DNSPolicy     string         `yaml:"dnsPolicy,omitempty"`
		Affinity      k8sAffinity    `yaml:"affinity"`
		Containers    []k8sContainer `yaml:"containers"`
	}
	k8sAffinity struct {
		PodAntiAffinity struct {
			Required []k8sAffinityTerm `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
		} `yaml:"podAntiAffinity"`
	}
	k8sAffinityTerm struct {
		LabelSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"labelSelector"`
		TopologyKey string `yaml:"topologyKey"`
	}
	k8sContainer struct {
		Name            string               `yaml:"name"`
		Image           string               `yaml:"image"`
		Command         []string             `yaml:"command"`
		Env             []k8sEnv             `yaml:"env"`
		Ports           []k8sContainerPort   `yaml:"ports"`
		SecurityContext k8sSecurityContext   `yaml:"securityContext"`
		Resources       *k8sResourceRequests `yaml:"resources,omitempty"`
	}
	k8sEnv struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	k8sContainerPort struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	}
	k8sSecurityContext struct {
		Capabilities struct {
			Add []string `yaml:"add"`
		} `yaml:"capabilities"`
	}
	k8sResourceRequests struct {
		Limits map[string]string `yaml:"limits"`
	}
)

// K8sManifests is the YAML of a fleet of o.Members pods, one per node, for `kubectl
// apply -f`: a headless Service (clusterIP None) over the Job's pods with the control
// port, and an Indexed Job of o.Members completions, all running at once. Pod i is
// NAME-i, found as NAME-i.NAME through the Service (its subdomain); its rank is its
// index, JOB_COMPLETION_INDEX, and every member runs `rdmabench fleet --world N
// --coordinator NAME-0.NAME`. Pods repel each other per node (a required pod
// anti-affinity on kubernetes.io/hostname), add the IPC_LOCK capability to lock their
// memory regions, and ask for o.RDMAResource and o.Network when given. Nothing is
// restarted: restartPolicy Never, backoffLimit 0; a fleet with a member down has no
// result to wait for.
func K8sManifests(o K8sOptions) (string, error) {
	if err := o.Check(); err != nil {
		return "", err
	}
	o = o.withDefaults()
	labels := func() map[string]string {
		return map[string]string{"app.kubernetes.io/name": DefaultName, "app.kubernetes.io/instance": o.Name}
	}
	svc := k8sService{
		APIVersion: "v1", Kind: "Service",
		Metadata: k8sMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels()},
		Spec: k8sServiceSpec{
			ClusterIP: "None",
			// Members look each other up as they start, before any is ready.
			PublishNotReadyAddresses: true,
			Selector:                 labels(),
			Ports:                    []k8sServicePort{{Name: "control", Port: o.Port, TargetPort: o.Port, Protocol: "TCP"}},
		},
	}
	command := []string{"rdmabench", "fleet", "--world", strconv.Itoa(o.Members), "--coordinator", o.Coordinator(), "--pattern", o.Pattern}
	c := k8sContainer{
		Name: "rdmabench", Image: o.Image,
		Command: append(command, o.Args...),
		Ports:   []k8sContainerPort{{Name: "control", ContainerPort: o.Port, Protocol: "TCP"}},
	}
	// The fleet's token, which every member must share, from a Secret (see the header).
	var tok k8sEnv
	tok.Name = "RDMABENCH_TOKEN"
	tok.ValueFrom.SecretKeyRef.Name, tok.ValueFrom.SecretKeyRef.Key = o.Name+"-token", "token"
	c.Env = []k8sEnv{tok}
	c.SecurityContext.Capabilities.Add = []string{"IPC_LOCK"}
	if o.RDMAResource != "" {
		name, count, _ := ParseResource(o.RDMAResource) // checked
		c.Resources = &k8sResourceRequests{Limits: map[string]string{name: strconv.Itoa(count)}}
	}
	pod := k8sPodSpec{Subdomain: o.Name, RestartPolicy: "Never", Containers: []k8sContainer{c}}
	if o.HostNetwork {
		pod.HostNetwork, pod.DNSPolicy = true, "ClusterFirstWithHostNet"
	}
	var term k8sAffinityTerm
	term.LabelSelector.MatchLabels = labels()
	term.TopologyKey = "kubernetes.io/hostname"
	pod.Affinity.PodAntiAffinity.Required = []k8sAffinityTerm{term}
	tmeta := k8sTemplateMeta{Labels: labels()}
	if o.Network != "" {
		tmeta.Annotations = map[string]string{MultusAnnotation: o.Network}
	}
	job := k8sJob{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: k8sMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels()},
		Spec: k8sJobSpec{
			CompletionMode: "Indexed", Completions: o.Members, Parallelism: o.Members, BackoffLimit: 0,
			Template: k8sTemplate{Metadata: tmeta, Spec: pod},
		},
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "# rdmabench fleet, pattern %s, over %d pods, one per node: kubectl apply -f THIS_FILE\n", o.Pattern, o.Members) // text: local (the command line)
	fmt.Fprintf(&b, "# Pod i is found by the others as %[1]s-i.%[1]s, its subdomain being the headless\n", o.Name)
	fmt.Fprintf(&b, "# Service %s; its rank is its index, JOB_COMPLETION_INDEX. Rank 0 coordinates,\n", o.Name)
	fmt.Fprintf(&b, "# at %s; its output:\n", o.Coordinator())
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	fmt.Fprintf(&b, "#   kubectl logs%s -l job-name=%s,batch.kubernetes.io/job-completion-index=0\n", ns, o.Name)
	fmt.Fprintf(&b, "# The members share a token, from the Secret %s-token; create it first:\n", o.Name)
	fmt.Fprintf(&b, "#   kubectl create secret generic%s %s-token --from-literal=token=$(openssl rand -hex 16)\n", ns, o.Name)
	for _, doc := range []any{svc, job} {
		b.WriteString("---\n")
		e := yaml.NewEncoder(&b)
		e.SetIndent(2)
		if err := e.Encode(doc); err != nil {
			return "", err
		}
		if err := e.Close(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}
