package fleet

// The Kubernetes manifests decoded strictly into Kubernetes' own types. k8s.io/api and
// sigs.k8s.io/yaml are test-only dependencies: the binary generates the YAML from its
// own small structs (recipes.go) and links neither.

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// decodeManifests splits the manifests at their document markers and decodes the
// Service and the Job strictly: an unknown or duplicated field is an error.
func decodeManifests(t *testing.T, s string) (corev1.Service, batchv1.Job) {
	t.Helper()
	docs := strings.Split(s, "\n---\n")
	if len(docs) != 3 || !strings.HasPrefix(docs[0], "# ") {
		t.Fatalf("want a comment and two documents, got %d parts:\n%s", len(docs), s)
	}
	var svc corev1.Service
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &svc); err != nil {
		t.Fatalf("the Service does not decode strictly: %v\n%s", err, docs[1])
	}
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &job); err != nil {
		t.Fatalf("the Job does not decode strictly: %v\n%s", err, docs[2])
	}
	return svc, job
}

func TestK8sManifestsDecodeStrictly(t *testing.T) {
	for _, tc := range k8sCases {
		s, err := K8sManifests(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		checkManifests(t, tc.golden, tc.opts, s)
	}
	// Every combination of the options that add something.
	for _, host := range []bool{false, true} {
		for _, res := range []string{"", "rdma/rdma_shared_device_a=2"} {
			for _, nad := range []string{"", "roce-a,roce-b"} {
				o := K8sOptions{Members: 5, Image: "img:1", HostNetwork: host, RDMAResource: res, Network: nad, Namespace: "ns1"}
				s, err := K8sManifests(o)
				if err != nil {
					t.Fatal(err)
				}
				checkManifests(t, "combination", o, s)
			}
		}
	}
}

func checkManifests(t *testing.T, name string, o K8sOptions, s string) {
	t.Helper()
	svc, job := decodeManifests(t, s)
	o = o.withDefaults()
	labels := map[string]string{"app.kubernetes.io/name": "rdmabench-fleet", "app.kubernetes.io/instance": o.Name}

	// The headless Service.
	if svc.APIVersion != "v1" || svc.Kind != "Service" || svc.Name != o.Name || svc.Namespace != o.Namespace {
		t.Errorf("%s: service %s %s %s/%s", name, svc.APIVersion, svc.Kind, svc.Namespace, svc.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: not a headless service: %+v", name, svc.Spec)
	}
	if !mapsEqual(svc.Spec.Selector, labels) {
		t.Errorf("%s: service selector %v", name, svc.Spec.Selector)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "control" || int(svc.Spec.Ports[0].Port) != o.Port ||
		svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[0].TargetPort.IntValue() != o.Port {
		t.Errorf("%s: service ports %+v", name, svc.Spec.Ports)
	}

	// The Indexed Job.
	spec := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != o.Name || job.Namespace != o.Namespace {
		t.Errorf("%s: job %s %s %s/%s", name, job.APIVersion, job.Kind, job.Namespace, job.Name)
	}
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("%s: completion mode %v", name, spec.CompletionMode)
	}
	if p(spec.Completions) != o.Members || p(spec.Parallelism) != o.Members || spec.BackoffLimit == nil || *spec.BackoffLimit != 0 {
		t.Errorf("%s: completions %v parallelism %v backoffLimit %v", name, spec.Completions, spec.Parallelism, spec.BackoffLimit)
	}
	pod := spec.Template.Spec
	if !mapsEqual(spec.Template.Labels, labels) {
		t.Errorf("%s: pod labels %v do not match the service's selector", name, spec.Template.Labels)
	}
	if pod.Subdomain != svc.Name || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: subdomain %q restartPolicy %q", name, pod.Subdomain, pod.RestartPolicy)
	}
	// One pod per node.
	aa := pod.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("%s: no required pod anti-affinity: %+v", name, aa)
	}
	term := aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != "kubernetes.io/hostname" || term.LabelSelector == nil || !mapsEqual(term.LabelSelector.MatchLabels, labels) {
		t.Errorf("%s: anti-affinity term %+v", name, term)
	}
	// Networking.
	if pod.HostNetwork != o.HostNetwork {
		t.Errorf("%s: hostNetwork %v", name, pod.HostNetwork)
	}
	if wantDNS := map[bool]corev1.DNSPolicy{true: corev1.DNSClusterFirstWithHostNet}[o.HostNetwork]; pod.DNSPolicy != wantDNS {
		t.Errorf("%s: dnsPolicy %q, want %q", name, pod.DNSPolicy, wantDNS)
	}
	if got, ok := spec.Template.Annotations[MultusAnnotation]; ok != (o.Network != "") || got != o.Network {
		t.Errorf("%s: annotations %v", name, spec.Template.Annotations)
	}
	// The container.
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != o.Image {
		t.Errorf("%s: image %q", name, c.Image)
	}
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || !slices.Contains(c.SecurityContext.Capabilities.Add, "IPC_LOCK") {
		t.Errorf("%s: no IPC_LOCK: %+v", name, c.SecurityContext)
	}
	wantCmd := append([]string{"rdmabench", "fleet", "--world", strconv.Itoa(o.Members), "--coordinator", o.Name + "-0." + o.Name}, "--pattern", o.Pattern)
	if o.Port != 18600 {
		wantCmd[5] += ":" + strconv.Itoa(o.Port)
	}
	if !slices.Equal(c.Command, append(wantCmd, o.Args...)) {
		t.Errorf("%s: command %q", name, c.Command)
	}
	if len(c.Ports) != 1 || int(c.Ports[0].ContainerPort) != o.Port {
		t.Errorf("%s: container ports %+v", name, c.Ports)
	}
	if o.RDMAResource == "" {
		if len(c.Resources.Limits) != 0 || len(c.Resources.Requests) != 0 {
			t.Errorf("%s: resources nobody asked for: %+v", name, c.Resources)
		}
	} else {
		rn, count, _ := ParseResource(o.RDMAResource)
		q, ok := c.Resources.Limits[corev1.ResourceName(rn)]
		if !ok || q.Value() != int64(count) || len(c.Resources.Limits) != 1 {
			t.Errorf("%s: limits %v, want %s: %d", name, c.Resources.Limits, rn, count)
		}
	}
	// Kubernetes sets the rank; the recipe must not set it some other way.
	for _, e := range c.Env {
		if e.Name == EnvJobIndex {
			t.Errorf("%s: the manifest sets %s itself", name, EnvJobIndex)
		}
	}
}

func p(i *int32) int {
	if i == nil {
		return -1
	}
	return int(*i)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// The strict decoding is strict: a field Kubernetes does not know fails it.
func TestK8sDecodingIsStrict(t *testing.T) {
	s, err := K8sManifests(K8sOptions{Members: 2, Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(s, "  backoffLimit: 0\n", "  backoffLimit: 0\n  backofLimit: 1\n", 1)
	if bad == s {
		t.Fatal("no backoffLimit line to misspell")
	}
	docs := strings.Split(bad, "\n---\n")
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &job); err == nil || !strings.Contains(err.Error(), "backofLimit") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}
