package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Metric families the alerts and the dashboard may use. A name used in an
// expression that is not here fails the tests, so a typo cannot ship; a
// name here that nothing uses fails too, so the list stays honest.
// Histograms may be used with their _bucket, _sum and _count series.
var metricFamilies = map[string]string{
	"geoshard_ingest_consumer_lag":                    "gauge",
	"geoshard_ingest_events_total":                    "counter",
	"geoshard_ingest_end_to_end_seconds":              "histogram",
	"geoshard_ingest_dead_letters_total":              "counter",
	"geoshard_ingest_pending_dishes":                  "gauge",
	"geoshard_ingest_directory_restaurants":           "gauge",
	"geoshard_ingest_last_progress_timestamp_seconds": "gauge",
	"geoshard_ingest_refreshes_total":                 "counter",
	"geoshard_ingest_parked_total":                    "counter",
	"geoshard_bulk_request_duration_seconds":          "histogram",
	"geoshard_bulk_items_total":                       "counter",
	"geoshard_bulk_retries_total":                     "counter",
	"geoshard_bulk_items_queued":                      "gauge",
	"geoshard_bulk_items_in_flight":                   "gauge",
	"geoshard_ingest_migration_phase":                 "gauge",
	"geoshard_migration_phase":                        "gauge",
	"geoshard_backfill_docs_total":                    "counter",
	"geoshard_backfill_takeovers_total":               "counter",
	"geoshard_shard_documents":                        "gauge",
	"geoshard_shard_planned_documents":                "gauge",
	"geoshard_map_imbalance":                          "gauge",
	"up":                                              "gauge",
}

const (
	k8sDir          = "k8s"
	alertsFile      = "prometheus/alerts.yaml"
	dashboardFile   = "grafana/geoshard-ingest.json"
	runbookFile     = "RUNBOOK.md"
	composeFile     = "docker-compose.yaml"
	secretExample   = "secret.example.yaml"
	secretName      = "geoshard-credentials"
	ingestName      = "geoshard-ingest"
	dsVariable      = "DS_PROMETHEUS"
	placeholderMark = "REPLACE_ME"
)

// Files in k8s/ that kustomization.yaml leaves out on purpose.
var notInKustomization = map[string]string{
	secretExample:                        "placeholder credentials: the real Secret is created out of band",
	"reshard/job.yaml":                   "a Job created once per reshard step with kubectl create -k deploy/k8s/reshard",
	"reshard/backfill/backfill-job.yaml": "the backfill's workers, created once per backfill with kubectl create -k deploy/k8s/reshard/backfill",
	"monitoring/servicemonitor.yaml":     "needs the prometheus-operator's CRDs: kubectl apply -k deploy/k8s/monitoring",
	"monitoring/podmonitor.yaml":         "needs the prometheus-operator's CRDs: kubectl apply -k deploy/k8s/monitoring",
}

// The keys of the credentials Secret, as the Deployment reads them.
var secretKeys = []string{
	"GEOSHARD_OPENSEARCH_USERNAME",
	"GEOSHARD_OPENSEARCH_PASSWORD",
	"GEOSHARD_KAFKA_SASL_USERNAME",
	"GEOSHARD_KAFKA_SASL_PASSWORD",
}

// The ConfigMap's settings; an empty value means any non-empty value.
var configSettings = map[string]string{
	"GEOSHARD_BROKERS":              "",
	"GEOSHARD_RESTAURANT_TOPIC":     "restaurants",
	"GEOSHARD_DISH_TOPIC":           "dishes",
	"GEOSHARD_DISH_KEY":             "restaurant",
	"GEOSHARD_KAFKA_SASL_MECHANISM": "scram-sha-512",
	"GEOSHARD_GROUP":                "geoshard-ingest",
	"GEOSHARD_DLQ_TOPIC":            "geoshard.dlq",
	"GEOSHARD_PARKING_TOPIC":        "geoshard-ingest.parked",
	"GEOSHARD_OPENSEARCH":           "https://opensearch:9200",
	"GEOSHARD_ALIAS":                "menu",
	"GEOSHARD_WORKERS":              "",
	"GEOSHARD_FLUSH_ITEMS":          "",
	"GEOSHARD_METRICS_ADDR":         ":9464",
	"GEOSHARD_LOG_LEVEL":            "",
}

var requiredAlerts = []string{
	"GeoshardIngestLagGrowing",
	"GeoshardIngestNoProgress",
	"GeoshardIngestDeadLetterRate",
	"GeoshardBulkRetryStorm",
	"GeoshardIngestDown",
	"GeoshardMapImbalanced",
}

// --- loading ---------------------------------------------------------------

// doc is one YAML document of a file.
type doc struct {
	file  string // relative to deploy/
	index int    // 0-based position in the file
	node  *yaml.Node
}

func (d doc) String() string { return fmt.Sprintf("%s (document %d)", d.file, d.index+1) }

func (d doc) decode(t *testing.T, v any) {
	t.Helper()
	if err := d.node.Decode(v); err != nil {
		t.Fatalf("%v: %v", d, err)
	}
}

// readYAML parses every document of a YAML file; empty documents are
// skipped.
func readYAML(t *testing.T, file string) []doc {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := parseYAML(file, b)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func parseYAML(file string, b []byte) ([]doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []doc
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", file, i+1, err)
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue
		}
		// Decoding into a generic value also reports duplicate keys.
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", file, i+1, err)
		}
		docs = append(docs, doc{file: file, index: i, node: &n})
	}
	return docs, nil
}

// yamlFiles lists every YAML file under deploy/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

type metadata struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels"`
}

type object struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	doc        doc
}

// manifests returns every Kubernetes object under k8s/ (the kustomization
// files aside), by path relative to k8s/.
func manifests(t *testing.T) map[string][]object {
	t.Helper()
	out := map[string][]object{}
	err := filepath.WalkDir(k8sDir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() || name == "kustomization.yaml" || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			return nil
		}
		rel, err := filepath.Rel(k8sDir, path)
		if err != nil {
			return err
		}
		for _, d := range readYAML(t, path) {
			var o object
			d.decode(t, &o)
			o.doc = d
			out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// only returns the one object of a kind and name, failing otherwise.
func only(t *testing.T, all map[string][]object, kind, name string) object {
	t.Helper()
	var found []object
	for _, objs := range all {
		for _, o := range objs {
			if o.Kind == kind && o.Metadata.Name == name {
				found = append(found, o)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %q in %s/, found %d", kind, name, k8sDir, len(found))
	}
	return found[0]
}

// --- Kubernetes types (the fields the tests look at) ------------------------

type envVar struct {
	Name      string  `yaml:"name"`
	Value     *string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Env   []envVar `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int   `yaml:"terminationGracePeriodSeconds"`
	RestartPolicy                 string `yaml:"restartPolicy"`
	SecurityContext               *struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	TopologySpreadConstraints []struct {
		TopologyKey   string `yaml:"topologyKey"`
		LabelSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"labelSelector"`
	} `yaml:"topologySpreadConstraints"`
	Containers []container `yaml:"containers"`
}

type podTemplate struct {
	Metadata metadata `yaml:"metadata"`
	Spec     podSpec  `yaml:"spec"`
}

type deployment struct {
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template podTemplate `yaml:"template"`
	} `yaml:"spec"`
}

type job struct {
	Spec struct {
		CompletionMode string      `yaml:"completionMode"`
		Completions    *int        `yaml:"completions"`
		Parallelism    *int        `yaml:"parallelism"`
		Template       podTemplate `yaml:"template"`
	} `yaml:"spec"`
}

type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type pdb struct {
	Spec struct {
		MaxUnavailable any `yaml:"maxUnavailable"`
		Selector       struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	} `yaml:"spec"`
}

// ingest returns the ingest Deployment and its one container.
func ingest(t *testing.T, all map[string][]object) (deployment, container) {
	t.Helper()
	var d deployment
	only(t, all, "Deployment", ingestName).doc.decode(t, &d)
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("Deployment %s: want one container, have %d", ingestName, n)
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

// metricsPort returns the ingest container's port named "metrics".
func metricsPort(t *testing.T, c container) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named metrics", c.Name)
	return 0
}

// portMatches reports whether a port reference (a name or a number, as
// probes and Services give it) is the named container port.
func portMatches(ref any, name string, number int) bool {
	switch v := ref.(type) {
	case string:
		return v == name || v == strconv.Itoa(number)
	case int:
		return v == number
	}
	return false
}

func subset(sub, super map[string]string) bool {
	if len(sub) == 0 {
		return false
	}
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return true
}

// --- YAML validity and manifest shape ----------------------------------------

func TestYAMLFilesParse(t *testing.T) {
	files := yamlFiles(t)
	if len(files) == 0 {
		t.Fatal("no YAML files found")
	}
	for _, f := range files {
		if docs := readYAML(t, f); len(docs) == 0 {
			t.Errorf("%s: no YAML document", f)
		}
	}
}

func TestParseYAMLMultiDocumentAndDuplicates(t *testing.T) {
	docs, err := parseYAML("multi.yaml", []byte("a: 1\n---\n---\nb: 2\n"))
	if err != nil || len(docs) != 2 {
		t.Fatalf("two documents and an empty one: got %d documents, err %v", len(docs), err)
	}
	if _, err := parseYAML("dup.yaml", []byte("a: 1\na: 2\n")); err == nil {
		t.Error("a duplicate key was accepted")
	}
	if _, err := parseYAML("bad.yaml", []byte("a: [1\n")); err == nil {
		t.Error("broken YAML was accepted")
	}
}

func TestManifestsHaveKindAndName(t *testing.T) {
	all := manifests(t)
	if len(all) == 0 {
		t.Fatal("no manifests in k8s/")
	}
	var namespaces []string
	for _, objs := range all {
		for _, o := range objs {
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%v: want apiVersion, kind and metadata.name; have %q, %q, %q", o.doc, o.APIVersion, o.Kind, o.Metadata.Name)
			}
			if o.Kind == "Namespace" {
				namespaces = append(namespaces, o.Metadata.Name)
			}
		}
	}
	if len(namespaces) != 1 {
		t.Fatalf("want one Namespace, have %v", namespaces)
	}
	for _, objs := range all {
		for _, o := range objs {
			if o.Kind != "Namespace" && o.Metadata.Namespace != namespaces[0] {
				t.Errorf("%v: %s %s is in namespace %q, want %q", o.doc, o.Kind, o.Metadata.Name, o.Metadata.Namespace, namespaces[0])
			}
		}
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	docs := readYAML(t, k8sDir+"/kustomization.yaml")
	if len(docs) != 1 {
		t.Fatalf("kustomization.yaml: want one document, have %d", len(docs))
	}
	var k struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Resources  []string `yaml:"resources"`
	}
	docs[0].decode(t, &k)
	if k.Kind != "Kustomization" || !strings.HasPrefix(k.APIVersion, "kustomize.config.k8s.io/") {
		t.Errorf("kustomization.yaml: kind %q apiVersion %q", k.Kind, k.APIVersion)
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		if listed[r] {
			t.Errorf("kustomization.yaml lists %s twice", r)
		}
		listed[r] = true
		if _, err := os.Stat(filepath.Join(k8sDir, r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
		if reason, ok := notInKustomization[r]; ok {
			t.Errorf("kustomization.yaml lists %s, which stays out of it: %s", r, reason)
		}
	}
	for file := range manifests(t) {
		if _, skip := notInKustomization[file]; skip {
			continue
		}
		if !listed[file] {
			t.Errorf("k8s/%s is not in kustomization.yaml resources", file)
		}
	}
	for file := range notInKustomization {
		if _, err := os.Stat(filepath.Join(k8sDir, file)); err != nil {
			t.Errorf("left out of the kustomization but missing: %v", err)
		}
	}
}

// --- the ingest Deployment and what points at it ----------------------------

func TestConfigMapSettings(t *testing.T) {
	all := manifests(t)
	cm := only(t, all, "ConfigMap", ingestName)
	var v struct {
		Data map[string]string `yaml:"data"`
	}
	cm.doc.decode(t, &v)
	for key, want := range configSettings {
		got, ok := v.Data[key]
		switch {
		case !ok || got == "":
			t.Errorf("ConfigMap %s: %s missing or empty", ingestName, key)
		case want != "" && got != want:
			t.Errorf("ConfigMap %s: %s = %q, want %q", ingestName, key, got, want)
		}
	}
	for key := range v.Data {
		if !strings.HasPrefix(key, "GEOSHARD_") {
			t.Errorf("ConfigMap %s: key %s is not a GEOSHARD_* setting", ingestName, key)
		}
		if secretish(key) {
			t.Errorf("ConfigMap %s: %s looks like a credential; credentials belong in the Secret %s", ingestName, key, secretName)
		}
	}
	// ConfigMap data holds strings only: an unquoted 8 or true is rejected
	// by the API server, and YAML 1.1 readers take yes/no/on/off as booleans.
	data := mappingValue(cm.doc.node.Content[0], "data")
	if data == nil {
		t.Fatal("ConfigMap has no data")
	}
	for i := 0; i+1 < len(data.Content); i += 2 {
		k, val := data.Content[i], data.Content[i+1]
		if val.Kind != yaml.ScalarNode || val.Tag != "!!str" {
			t.Errorf("ConfigMap %s: %s is not a string (tag %s); quote it", ingestName, k.Value, val.Tag)
		}
		if val.Style == 0 && slices.Contains([]string{"y", "n", "yes", "no", "on", "off"}, strings.ToLower(val.Value)) {
			t.Errorf("ConfigMap %s: %s = %s is a boolean to YAML 1.1 readers; quote it", ingestName, k.Value, val.Value)
		}
	}
}

// mappingValue returns the value of key in a mapping node, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// packageSource returns a package's non-test Go source.
func packageSource(t *testing.T, pkg string) string {
	t.Helper()
	files, err := filepath.Glob("../" + pkg + "/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b.WriteString(mustRead(t, f))
		}
	}
	if b.Len() == 0 {
		t.Fatalf("no Go source in ../%s", pkg)
	}
	return b.String()
}

// The OpenSearch settings the Deployment passes are the ones the
// commands' OpenSearch flags read (internal/cli).
func TestOpenSearchSettingsAreRead(t *testing.T) {
	src := packageSource(t, "internal/cli")
	all := manifests(t)
	_, c := ingest(t, all)
	names := []string{"GEOSHARD_OPENSEARCH"}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "GEOSHARD_OPENSEARCH") {
			names = append(names, e.Name)
		}
	}
	// A variable is read directly ("NAME") or named by a flag's usage
	// "(NAME)", which the commands apply (internal/envflag).
	for _, n := range names {
		if !strings.Contains(src, `"`+n+`"`) && !strings.Contains(src, "("+n+")") {
			t.Errorf("%s is set for ingest but the OpenSearch flags (internal/cli) do not read it", n)
		}
	}
}

func TestDeployment(t *testing.T) {
	all := manifests(t)
	d, c := ingest(t, all)
	spec := d.Spec.Template.Spec

	if d.Spec.Replicas == nil || *d.Spec.Replicas < 1 {
		t.Error("replicas: want at least 1")
	}
	if !subset(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
		t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels)
	}
	if c.Image == "" {
		t.Error("container has no image")
	}
	if len(c.Command) > 0 || len(c.Args) > 0 {
		t.Errorf("ingest reads its GEOSHARD_* environment; want no command or args, have %q %q", c.Command, c.Args)
	}

	// Settings: all of the ConfigMap.
	fromConfigMap := false
	for _, ef := range c.EnvFrom {
		if ef.SecretRef != nil {
			t.Errorf("envFrom a Secret (%s) loads every key it may ever hold; reference keys one by one", ef.SecretRef.Name)
		}
		if ef.ConfigMapRef != nil {
			only(t, all, "ConfigMap", ef.ConfigMapRef.Name)
			fromConfigMap = true
		}
	}
	if !fromConfigMap {
		t.Error("container does not load the ConfigMap with envFrom")
	}

	// Lifecycle.
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g != 60 {
		t.Errorf("terminationGracePeriodSeconds: want 60 (the drain deadline fits in it), have %s", fmtInt(g))
	}

	// Probes on the metrics port.
	port := metricsPort(t, c)
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			t.Errorf("%s: want an httpGet probe", p.name)
		case p.probe.HTTPGet.Path != p.path:
			t.Errorf("%s: path %q, want %q", p.name, p.probe.HTTPGet.Path, p.path)
		case !portMatches(p.probe.HTTPGet.Port, "metrics", port):
			t.Errorf("%s: port %v, want the metrics port (%d)", p.name, p.probe.HTTPGet.Port, port)
		}
	}

	// Security.
	checkSecurity(t, "Deployment "+ingestName, spec)

	// Resources, sized for a 2-CPU node.
	checkResources(t, "Deployment "+ingestName, c)

	// Spread.
	if len(spec.TopologySpreadConstraints) == 0 {
		t.Error("no topologySpreadConstraints")
	}
	for _, tsc := range spec.TopologySpreadConstraints {
		if tsc.TopologyKey == "" || !subset(tsc.LabelSelector.MatchLabels, d.Spec.Template.Metadata.Labels) {
			t.Errorf("topologySpreadConstraint %q does not select the ingest pods", tsc.TopologyKey)
		}
	}
}

func fmtInt(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

func checkSecurity(t *testing.T, what string, spec podSpec) {
	t.Helper()
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s: container %s has no securityContext", what, c.Name)
			continue
		}
		if !podNonRoot && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			t.Errorf("%s: container %s may run as root", what, c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: container %s: want readOnlyRootFilesystem", what, c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: container %s: want allowPrivilegeEscalation false", what, c.Name)
		}
		if !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: container %s: want capabilities.drop [ALL]", what, c.Name)
		}
	}
}

func checkResources(t *testing.T, what string, c container) {
	t.Helper()
	const nodeCPU = 2.0
	for _, r := range []string{"cpu", "memory"} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req == "" || lim == "" {
			t.Errorf("%s: %s request and limit: have %q and %q", what, r, req, lim)
			continue
		}
		rq, err1 := quantity(req)
		lq, err2 := quantity(lim)
		if err := errors.Join(err1, err2); err != nil {
			t.Errorf("%s: %s: %v", what, r, err)
			continue
		}
		if rq > lq {
			t.Errorf("%s: %s request %s above its limit %s", what, r, req, lim)
		}
		if r == "cpu" && lq >= nodeCPU {
			t.Errorf("%s: cpu limit %s leaves nothing of a %g-CPU node", what, lim, nodeCPU)
		}
	}
}

// quantity parses the Kubernetes quantities these manifests use: plain and
// milli numbers, and binary suffixes.
func quantity(s string) (float64, error) {
	mult := 1.0
	for suffix, m := range map[string]float64{"m": 1e-3, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad quantity %q", s)
	}
	return v * mult, nil
}

func TestMetricsPortAgrees(t *testing.T) {
	all := manifests(t)
	d, c := ingest(t, all)
	port := metricsPort(t, c)

	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	only(t, all, "ConfigMap", ingestName).doc.decode(t, &cm)
	_, p, err := net.SplitHostPort(cm.Data["GEOSHARD_METRICS_ADDR"])
	if err != nil {
		t.Fatalf("GEOSHARD_METRICS_ADDR: %v", err)
	}
	if p != strconv.Itoa(port) {
		t.Errorf("GEOSHARD_METRICS_ADDR port %s, container port metrics %d", p, port)
	}
	var svc service
	only(t, all, "Service", ingestName).doc.decode(t, &svc)
	if !subset(svc.Spec.Selector, d.Spec.Template.Metadata.Labels) {
		t.Errorf("Service selector %v does not select the ingest pods %v", svc.Spec.Selector, d.Spec.Template.Metadata.Labels)
	}
	found := false
	for _, sp := range svc.Spec.Ports {
		if sp.Name == "metrics" {
			found = true
			if !portMatches(sp.TargetPort, "metrics", port) {
				t.Errorf("Service port metrics: targetPort %v, want the container port metrics (%d)", sp.TargetPort, port)
			}
		}
	}
	if !found {
		t.Error("Service has no port named metrics")
	}

	var b pdb
	only(t, all, "PodDisruptionBudget", ingestName).doc.decode(t, &b)
	if fmt.Sprint(b.Spec.MaxUnavailable) != "1" {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", b.Spec.MaxUnavailable)
	}
	if !subset(b.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the ingest pods", b.Spec.Selector.MatchLabels)
	}
}

func TestReshardJob(t *testing.T) {
	all := manifests(t)
	var jobs []object
	for _, o := range all["reshard/job.yaml"] {
		if o.Kind == "Job" {
			jobs = append(jobs, o)
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("reshard/job.yaml: want one Job, have %d", len(jobs))
	}
	var j job
	jobs[0].doc.decode(t, &j)
	spec := j.Spec.Template.Spec
	if spec.RestartPolicy != "Never" && spec.RestartPolicy != "OnFailure" {
		t.Errorf("Job restartPolicy %q", spec.RestartPolicy)
	}
	if len(spec.Containers) != 1 || len(spec.Containers[0].Args) == 0 {
		t.Fatal("Job: want one container with the verb in its args")
	}
	if args := spec.Containers[0].Args; args[0] != "run" || !slices.Contains(args, "--map") {
		t.Errorf("Job args %v: want reshard run --map <file>", args)
	}
	checkSecurity(t, "Job", spec)
	checkResources(t, "Job", spec.Containers[0])
	text, err := os.ReadFile(k8sDir + "/reshard/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"resumable", "idempotent"} {
		if !bytes.Contains(text, []byte(w)) {
			t.Errorf("reshard/job.yaml does not say the steps are %s", w)
		}
	}
}

// The backfill's workers: an Indexed Job of N pods, each a `reshard
// backfill` named by its pod in the slices' leases, that never restarts
// the copy, and that neither kubectl apply -k deploy/k8s nor the run Job's
// kustomization creates.
func TestReshardBackfillJob(t *testing.T) {
	const file = "reshard/backfill/backfill-job.yaml"
	all := manifests(t)
	if len(all[file]) != 1 || all[file][0].Kind != "Job" {
		t.Fatalf("%s: want one Job, have %d objects", file, len(all[file]))
	}
	var j job
	all[file][0].doc.decode(t, &j)
	s := j.Spec
	if s.CompletionMode != "Indexed" || s.Completions == nil || s.Parallelism == nil || *s.Completions < 2 || *s.Parallelism != *s.Completions {
		t.Errorf("%s: completionMode %q, completions %v, parallelism %v; want Indexed with parallelism = completions >= 2", file, s.CompletionMode, s.Completions, s.Parallelism)
	}
	spec := s.Template.Spec
	if spec.RestartPolicy != "Never" && spec.RestartPolicy != "OnFailure" {
		t.Errorf("%s: restartPolicy %q", file, spec.RestartPolicy)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: want one container", file)
	}
	c := spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "backfill" || slices.Contains(c.Args, "--restart") || !slices.Contains(c.Args, "--slices") || !slices.Contains(c.Args, "--metrics-addr") {
		t.Errorf("%s: args %v; want reshard backfill --slices N --metrics-addr, never --restart", file, c.Args)
	}
	named := false
	for _, e := range c.Env {
		if e.Name == "GEOSHARD_WORKER_ID" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			named = true
		}
	}
	if !named {
		t.Errorf("%s: want GEOSHARD_WORKER_ID from the pod's metadata.name (each worker's name in the leases)", file)
	}
	checkSecurity(t, "backfill Job", spec)
	checkResources(t, "backfill Job", c)
	k := readKustomization(t, k8sDir+"/reshard/backfill/kustomization.yaml")
	if !slices.Equal(k.Resources, []string{"backfill-job.yaml"}) || !slices.Contains(k.Components, "../../images") {
		t.Errorf("reshard/backfill/kustomization.yaml: resources %v, components %v; want the Job alone, with the images component", k.Resources, k.Components)
	}
	if r := readKustomization(t, k8sDir+"/reshard/kustomization.yaml").Resources; slices.ContainsFunc(r, func(s string) bool { return strings.Contains(s, "backfill") }) {
		t.Errorf("reshard/kustomization.yaml resources %v: the run Job's kustomization must not create the backfill's workers", r)
	}
	text := string(mustRead(t, k8sDir+"/"+file))
	for _, w := range []string{"create -k deploy/k8s/reshard/backfill", "reshard verify", "lease", "RUNBOOK.md"} {
		if !strings.Contains(text, w) {
			t.Errorf("%s: the header does not say %q", file, w)
		}
	}
}

// --- secrets -----------------------------------------------------------------

var secretishRE = regexp.MustCompile(`(?i)(password|passwd|secret|token|credential|api_?key)`)

func secretish(s string) bool { return secretishRE.MatchString(s) }

func TestSecretReferencedNotShipped(t *testing.T) {
	all := manifests(t)

	// The Deployment reads every key from the Secret, by reference.
	_, c := ingest(t, all)
	refs := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if e.ValueFrom.SecretKeyRef.Name != secretName {
				t.Errorf("env %s comes from Secret %q, want %q", e.Name, e.ValueFrom.SecretKeyRef.Name, secretName)
			}
			refs[e.ValueFrom.SecretKeyRef.Key] = true
		}
	}
	for _, k := range secretKeys {
		if !refs[k] {
			t.Errorf("the Deployment does not read %s from the Secret %s", k, secretName)
		}
	}

	// The only Secret anywhere in deploy/ is the example, and it is not
	// applied.
	for _, f := range yamlFiles(t) {
		for _, d := range readYAML(t, f) {
			var o object
			d.decode(t, &o)
			if o.Kind == "Secret" && f != k8sDir+"/"+secretExample {
				t.Errorf("%v: a Secret is shipped; only %s may hold one", d, secretExample)
			}
			if f != k8sDir+"/"+secretExample {
				walkLiteralSecrets(t, d, d.node)
			}
		}
	}

	// The example holds placeholders only.
	ex := all[secretExample]
	if len(ex) != 1 || ex[0].Kind != "Secret" || ex[0].Metadata.Name != secretName {
		t.Fatalf("%s: want one Secret named %s", secretExample, secretName)
	}
	var s struct {
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	ex[0].doc.decode(t, &s)
	if len(s.Data) > 0 {
		t.Errorf("%s: base64 data hides what it holds; use stringData placeholders", secretExample)
	}
	var keys []string
	for k, v := range s.StringData {
		keys = append(keys, k)
		if !strings.Contains(v, placeholderMark) {
			t.Errorf("%s: %s = %q is not an obvious placeholder (want it to contain %s)", secretExample, k, v, placeholderMark)
		}
	}
	sort.Strings(keys)
	want := slices.Clone(secretKeys)
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Errorf("%s keys %v, want %v", secretExample, keys, want)
	}
	text, err := os.ReadFile(k8sDir + "/" + secretExample)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte("WARNING")) {
		t.Errorf("%s has no warning comment", secretExample)
	}
}

// walkLiteralSecrets fails on a credential written out: a key that names a
// secret with a non-empty scalar value, or an env entry whose name names a
// secret and that has a literal value.
func walkLiteralSecrets(t *testing.T, d doc, n *yaml.Node) {
	t.Helper()
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkLiteralSecrets(t, d, c)
		}
	case yaml.MappingNode:
		if name, value := mappingValue(n, "name"), mappingValue(n, "value"); name != nil && value != nil &&
			secretish(name.Value) && value.Kind == yaml.ScalarNode && value.Value != "" {
			t.Errorf("%v line %d: %s has a literal value; read it from the Secret %s", d, value.Line, name.Value, secretName)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if secretish(k.Value) && v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value != "" {
				t.Errorf("%v line %d: %s has a literal value", d, v.Line, k.Value)
			}
			walkLiteralSecrets(t, d, v)
		}
	}
}

// --- alerts and runbook ------------------------------------------------------

type rule struct {
	Alert         string            `yaml:"alert"`
	Record        string            `yaml:"record"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	docs := readYAML(t, alertsFile)
	if len(docs) != 1 {
		t.Fatalf("%s: want one document, have %d", alertsFile, len(docs))
	}
	var f struct {
		Groups []struct {
			Name        string            `yaml:"name"`
			Interval    string            `yaml:"interval"`
			QueryOffset string            `yaml:"query_offset"`
			Limit       int               `yaml:"limit"`
			Labels      map[string]string `yaml:"labels"`
			Rules       []rule            `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(mustRead(t, alertsFile)))
	dec.KnownFields(true) // a misspelt field is an error, as in promtool
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var rules []rule
	groups := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("%s: group name %q empty or repeated", alertsFile, g.Name)
		}
		groups[g.Name] = true
		rules = append(rules, g.Rules...)
	}
	return rules
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	durationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	runbookRE  = regexp.MustCompile(`^deploy/RUNBOOK\.md#([a-z0-9_-]+)$`)
)

func TestAlerts(t *testing.T) {
	rules := alertRules(t)
	anchors := runbookAnchors(t)
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Alert == "" {
			if r.Record == "" {
				t.Errorf("a rule with neither alert nor record: %q", r.Expr)
			}
			continue
		}
		if seen[r.Alert] {
			t.Errorf("alert %s defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if !durationRE.MatchString(r.For) {
			t.Errorf("%s: for %q: want a duration such as 5m", r.Alert, r.For)
		}
		if sev := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, sev) {
			t.Errorf("%s: severity %q: want critical, warning or info", r.Alert, sev)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		m := runbookRE.FindStringSubmatch(r.Annotations["runbook_url"])
		switch {
		case m == nil:
			t.Errorf("%s: runbook_url %q: want deploy/RUNBOOK.md#<anchor>", r.Alert, r.Annotations["runbook_url"])
		case !anchors[m[1]]:
			t.Errorf("%s: runbook_url anchor #%s is no heading of %s", r.Alert, m[1], runbookFile)
		}
		if _, err := promMetrics(r.Expr); err != nil {
			t.Errorf("%s: expr: %v", r.Alert, err)
		}
	}
	for _, a := range requiredAlerts {
		if !seen[a] {
			t.Errorf("alert %s is missing", a)
		}
	}
}

func TestRunbookHasAliasCutover(t *testing.T) {
	if !runbookAnchors(t)["alias-cutover"] {
		t.Errorf("%s has no section \"Alias cutover\"", runbookFile)
	}
}

// runbookAnchors returns the anchors a Markdown renderer gives the headings
// of RUNBOOK.md (GitHub's rule: lower case, punctuation dropped, spaces to
// hyphens, repeats numbered).
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	return markdownAnchors(mustRead(t, runbookFile))
}

func markdownAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	count := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if len(line)-len(text) > 6 || (text != "" && text[0] != ' ') {
			continue
		}
		slug := slugify(strings.TrimSpace(text))
		if n := count[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		count[slug]++
	}
	return anchors
}

func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestMarkdownAnchors(t *testing.T) {
	got := markdownAnchors("# Top\n## Alias cutover\n```\n# not a heading\n```\n## Top\n### What's `up`?\n#nospace\n")
	for _, a := range []string{"top", "alias-cutover", "top-1", "whats-up"} {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
	if got["not-a-heading"] || got["nospace"] {
		t.Errorf("anchors from a code block or a non-heading: %v", got)
	}
}

// --- metric names ------------------------------------------------------------

// promMetrics returns the metric names an expression selects. It is a
// tokenizer, not a PromQL parser: it skips strings, label matchers, range
// and subquery brackets, numbers and durations, functions and aggregations
// (names followed by a parenthesis), keywords and the label lists of
// by/without/on/ignoring/group_left/group_right. Every other name is a
// metric.
func promMetrics(expr string) ([]string, error) {
	var out []string
	depth := 0
	n := len(expr)
	skipSpace := func(i int) int {
		for i < n && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
		return i
	}
	// skipTo returns the index just past the closer matching expr[i],
	// skipping quoted strings.
	skipTo := func(i int, closer byte) (int, error) {
		start := i
		for i++; i < n; i++ {
			switch c := expr[i]; {
			case c == closer:
				return i + 1, nil
			case c == '"' || c == '\'' || c == '`':
				j, err := skipString(expr, i)
				if err != nil {
					return 0, err
				}
				i = j - 1
			}
		}
		return 0, fmt.Errorf("unclosed %q at offset %d", expr[start], start)
	}
	for i := 0; i < n; {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{':
			j, err := skipTo(i, '}')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '[':
			j, err := skipTo(i, ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unopened %q at offset %d", c, i)
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unopened ')' at offset %d", i)
			}
			i++
		case c == '#':
			for i < n && expr[i] != '\n' {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < n && (isNameByte(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '$':
			// A Grafana variable outside a matcher or a range.
			i++
			if i < n && expr[i] == '{' {
				j, err := skipTo(i, '}')
				if err != nil {
					return nil, err
				}
				i = j
			}
			for i < n && isNameByte(expr[i]) {
				i++
			}
		case isNameByte(c):
			start := i
			for i < n && isNameByte(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			lower := strings.ToLower(word)
			switch {
			case promLabelListKeywords[lower]:
				if next < n && expr[next] == '(' {
					j, err := skipTo(next, ')')
					if err != nil {
						return nil, err
					}
					i = j
				}
			case promKeywords[lower], promAggregations[lower]:
			case next < n && expr[next] == '(':
				// A function call.
			default:
				out = append(out, word)
			}
		default:
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%d unclosed '('", depth)
	}
	return out, nil
}

func skipString(s string, i int) (int, error) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at offset %d", i)
}

func isNameByte(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

var (
	promLabelListKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	promKeywords          = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "atan2": true}
	promAggregations      = map[string]bool{
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	}
)

func TestPromMetrics(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`absent(up{job="geoshard-ingest"}) or (up{job="geoshard-ingest"} == 0)`, []string{"up", "up"}},
		{`sum by (topic, partition) (rate(a_total{x=~"$pod", y="}"}[5m])) > 0 and on (instance) b`, []string{"a_total", "b"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[$__rate_interval])))`, []string{"h_bucket"}},
		{`deriv(sum by (p)(m)[15m:1m]) > 1e3`, []string{"m"}},
		{`time() - ts_seconds > 300`, []string{"ts_seconds"}},
		{`sum(x) without (pod) / ignoring (a) group_left y offset 5m`, []string{"x", "y"}},
		{`MAX BY (phase) (p) == 1 # a comment naming nothing`, []string{"p"}},
		{`a * on (b) group_left c`, []string{"a", "c"}},
	} {
		got, err := promMetrics(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("promMetrics(%q) = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`sum(x`, `x{a="b"`, `rate(x[5m)`, `x)`, `x{a="b}`} {
		if _, err := promMetrics(bad); err == nil {
			t.Errorf("promMetrics(%q): no error", bad)
		}
	}
}

// knownMetric reports whether a series name belongs to an allowed family.
func knownMetric(name string) (family string, ok bool) {
	if _, ok := metricFamilies[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base := strings.TrimSuffix(name, suffix)
		if base != name && metricFamilies[base] == "histogram" {
			return base, true
		}
	}
	return "", false
}

// The bulk writer, the ingest pipeline and the reshard workflow (its
// migration metrics and the balance watch ingest runs) define their
// metrics; the allow-list must not drift from them.
func TestBulkMetricNamesExist(t *testing.T) {
	for prefix, pkg := range map[string]string{
		"geoshard_bulk_": "bulk", "geoshard_ingest_": "pipeline",
		"geoshard_migration_": "migrate", "geoshard_backfill_": "migrate", "geoshard_shard_": "migrate", "geoshard_map_": "migrate",
	} {
		defined := map[string]bool{}
		for _, m := range regexp.MustCompile(`Name:\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"`).FindAllStringSubmatch(packageSource(t, pkg), -1) {
			defined[m[1]] = true
		}
		for name := range metricFamilies {
			if strings.HasPrefix(name, prefix) && !defined[name] {
				t.Errorf("%s is allowed here but the %s package defines no such metric", name, pkg)
			}
		}
	}
}

func TestMetricNames(t *testing.T) {
	used := map[string][]string{} // family → where
	check := func(where, expr string) {
		names, err := promMetrics(expr)
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			return
		}
		for _, name := range names {
			if name != "up" && !strings.HasPrefix(name, "geoshard_") {
				t.Errorf("%s: metric %s: want geoshard_* or up", where, name)
			}
			family, ok := knownMetric(name)
			if !ok {
				t.Errorf("%s: metric %s is not in the allow-list (a typo?)", where, name)
				continue
			}
			used[family] = append(used[family], where)
		}
	}
	for _, r := range alertRules(t) {
		check(alertsFile+" "+r.Alert+r.Record, r.Expr)
	}
	dash := loadDashboard(t)
	for _, p := range dash.allPanels() {
		for _, tg := range p.Targets {
			check(fmt.Sprintf("%s panel %q target %s", dashboardFile, p.Title, tg.RefID), tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q := v.queryString(); q != "" {
			check(fmt.Sprintf("%s variable %s", dashboardFile, v.Name), labelValuesSelector(q))
		}
	}
	var unused []string
	for family := range metricFamilies {
		if len(used[family]) == 0 {
			unused = append(unused, family)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("allowed but used by no alert or panel: %v", unused)
	}
}

// labelValuesSelector turns Grafana's label_values(selector, label) into the
// selector; other queries are returned as they are.
func labelValuesSelector(q string) string {
	q = strings.TrimSpace(q)
	if !strings.HasPrefix(q, "label_values(") || !strings.HasSuffix(q, ")") {
		return q
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")")
	if i := strings.LastIndex(inner, ","); i >= 0 {
		return inner[:i]
	}
	return "" // label_values(label): no metric
}

// --- dashboard ---------------------------------------------------------------

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Collapsed  bool           `json:"collapsed"`
	Datasource *datasourceRef `json:"datasource"`
	GridPos    *struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
}

// queryString returns a query variable's PromQL, given as a string or as
// {"query": "..."}.
func (v variable) queryString() string {
	if v.Type != "query" || len(v.Query) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil {
		return o.Query
	}
	return ""
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

// allPanels returns every panel, rows and the panels inside collapsed rows
// included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s is not valid JSON", dashboardFile)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard has no uid or title")
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want at least 36", d.SchemaVersion)
	}
	ds := "${" + dsVariable + "}"
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars[dsVariable]; !ok || v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		t.Errorf("want a Prometheus datasource variable %s, have %+v", dsVariable, v)
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != ds) {
			t.Errorf("variable %s does not query %s", v.Name, ds)
		}
	}

	ids := map[int]bool{}
	titles := map[string]bool{}
	for _, p := range d.allPanels() {
		if p.ID <= 0 || ids[p.ID] {
			t.Errorf("panel %q: id %d missing or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" || titles[p.Title] {
			t.Errorf("panel id %d: title %q missing or repeated", p.ID, p.Title)
		}
		titles[p.Title] = true
		if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: bad gridPos %+v", p.Title, g)
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				t.Errorf("row %q has targets", p.Title)
			}
			continue
		}
		if len(p.Panels) > 0 {
			t.Errorf("panel %q is not a row but holds panels", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != ds {
			t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %q has no expr, or its refId is missing or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil && tg.Datasource.UID != ds {
				t.Errorf("panel %q target %s: datasource uid %q, want %s", p.Title, tg.RefID, tg.Datasource.UID, ds)
			}
		}
	}
}

// Every metric family the deployment exports has a panel, and the reshard
// ones sit in a collapsed row.
func TestDashboardCoversMetrics(t *testing.T) {
	d := loadDashboard(t)
	families := func(p panel) map[string]bool {
		out := map[string]bool{}
		for _, tg := range p.Targets {
			names, _ := promMetrics(tg.Expr)
			for _, n := range names {
				if f, ok := knownMetric(n); ok {
					out[f] = true
				}
			}
		}
		return out
	}
	shown := map[string]bool{}
	inCollapsed := map[string]bool{}
	for _, top := range d.Panels {
		for f := range families(top) {
			shown[f] = true
		}
		for _, p := range top.Panels {
			for f := range families(p) {
				shown[f] = true
				if top.Type == "row" && top.Collapsed {
					inCollapsed[f] = true
				}
			}
		}
	}
	for f := range metricFamilies {
		if f == "up" || f == "geoshard_ingest_last_progress_timestamp_seconds" {
			continue // alert inputs, not dashboard panels
		}
		if !shown[f] {
			t.Errorf("no dashboard panel shows %s", f)
		}
	}
	for _, f := range []string{"geoshard_ingest_migration_phase", "geoshard_migration_phase", "geoshard_backfill_docs_total"} {
		if !inCollapsed[f] {
			t.Errorf("%s is not shown in a collapsed row", f)
		}
	}
}

// --- docker compose ----------------------------------------------------------

func TestCompose(t *testing.T) {
	docs := readYAML(t, composeFile)
	if len(docs) != 1 {
		t.Fatalf("%s: want one document, have %d", composeFile, len(docs))
	}
	var c struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	docs[0].decode(t, &c)
	for _, want := range []struct {
		service, image, port string
		env                  map[string]string
	}{
		{"opensearch", "opensearchproject/opensearch:3.9.0", "9200", map[string]string{"discovery.type": "single-node", "DISABLE_SECURITY_PLUGIN": "true"}},
		{"kafka", "apache/kafka:4.1.0", "9092", map[string]string{"KAFKA_PROCESS_ROLES": "broker,controller"}},
	} {
		s, ok := c.Services[want.service]
		if !ok {
			t.Errorf("%s: no service %s", composeFile, want.service)
			continue
		}
		if s.Image != want.image {
			t.Errorf("%s: %s image %q, want %q", composeFile, want.service, s.Image, want.image)
		}
		published := false
		for _, p := range s.Ports {
			if strings.HasSuffix(p, ":"+want.port+":"+want.port) || p == want.port+":"+want.port {
				published = true
			}
		}
		if !published {
			t.Errorf("%s: %s does not publish port %s (ports %v)", composeFile, want.service, want.port, s.Ports)
		}
		for k, v := range want.env {
			if s.Environment[k] != v {
				t.Errorf("%s: %s %s = %q, want %q", composeFile, want.service, k, s.Environment[k], v)
			}
		}
	}

	// The documented test command matches the tests it names.
	text := mustRead(t, composeFile)
	const cmd = "GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:9200 go test -tags realcluster ./internal/osfake/"
	if !strings.Contains(text, cmd) {
		t.Errorf("%s does not show %q", composeFile, cmd)
	}
	src := mustRead(t, "../internal/osfake/realcluster_test.go")
	for _, w := range []string{"//go:build realcluster", "GEOSHARD_OPENSEARCH_URL"} {
		if !strings.Contains(src, w) {
			t.Errorf("internal/osfake/realcluster_test.go lacks %q, which %s relies on", w, composeFile)
		}
	}
}

// --- images -------------------------------------------------------------------

// kustomization is the part of a kustomization file the tests read.
type kustomization struct {
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
	Components []string `yaml:"components"`
	Images     []struct {
		Name   string `yaml:"name"`
		NewTag string `yaml:"newTag"`
	} `yaml:"images"`
}

func readKustomization(t *testing.T, file string) kustomization {
	t.Helper()
	docs := readYAML(t, file)
	if len(docs) != 1 {
		t.Fatalf("%s: want one document, have %d", file, len(docs))
	}
	var k kustomization
	docs[0].decode(t, &k)
	return k
}

// The image tags live in one place, the images component: the ingest
// Deployment's and the reshard Job's kustomizations include it, their
// manifests name the images without a tag, and make image tags what it
// builds from it.
func TestImageTagsComeFromOnePlace(t *testing.T) {
	c := readKustomization(t, k8sDir+"/images/kustomization.yaml")
	if c.Kind != "Component" {
		t.Errorf("images/kustomization.yaml: kind %q, want Component", c.Kind)
	}
	tags := map[string]string{}
	for _, im := range c.Images {
		tags[im.Name] = im.NewTag
	}
	if tags["geoshard/ingest"] == "" || tags["geoshard/ingest"] != tags["geoshard/reshard"] || tags["geoshard/ingest"] == "latest" {
		t.Errorf("images component tags %v: want one released tag for geoshard/ingest and geoshard/reshard", tags)
	}
	for file, want := range map[string]string{"kustomization.yaml": "images", "reshard/kustomization.yaml": "../images", "reshard/backfill/kustomization.yaml": "../../images"} {
		if k := readKustomization(t, k8sDir+"/"+file); !slices.Contains(k.Components, want) {
			t.Errorf("%s components %v: want %s", file, k.Components, want)
		}
	}
	all := manifests(t)
	for file, image := range map[string]string{"deployment.yaml": "geoshard/ingest", "reshard/job.yaml": "geoshard/reshard", "reshard/backfill/backfill-job.yaml": "geoshard/reshard"} {
		text := string(mustRead(t, k8sDir+"/"+file))
		if !strings.Contains(text, "image: "+image+"\n") {
			t.Errorf("%s: want the image %s without a tag (the component sets it)", file, image)
		}
		if len(all[file]) == 0 {
			t.Errorf("%s: no objects", file)
		}
	}
	mk := string(mustRead(t, "../Makefile"))
	if !strings.Contains(mk, "deploy/k8s/images/kustomization.yaml") || !strings.Contains(mk, "--target ingest") || !strings.Contains(mk, "--target reshard") {
		t.Error("Makefile: want an image target that builds both targets, tagged from deploy/k8s/images/kustomization.yaml")
	}
}

// The Dockerfile builds both commands as static binaries onto a base
// that runs as the manifests' non-root user.
func TestDockerfile(t *testing.T) {
	text := string(mustRead(t, "../Dockerfile"))
	for _, w := range []string{
		"CGO_ENABLED=0", "./cmd/ingest", "./cmd/reshard", "AS ingest", "AS reshard",
		"distroless/static", "USER 65532:65532", `ENTRYPOINT ["/ingest"]`, `ENTRYPOINT ["/reshard"]`,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("Dockerfile: want %q", w)
		}
	}
	if !strings.Contains(text, "golang:"+goVersion(t)) {
		t.Errorf("Dockerfile: want the builder golang:%s of go.mod", goVersion(t))
	}
}

// goVersion is go.mod's language version, major.minor.
func goVersion(t *testing.T) string {
	for _, line := range strings.Split(string(mustRead(t, "../go.mod")), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			parts := strings.Split(strings.TrimSpace(v), ".")
			return parts[0] + "." + parts[1]
		}
	}
	t.Fatal("go.mod: no go line")
	return ""
}

// The monitoring objects give the scraped series the job labels the
// alerts and the dashboard select on.
func TestMonitoringSetsTheJobLabels(t *testing.T) {
	all := manifests(t)
	sm := only(t, all, "ServiceMonitor", ingestName)
	svc := only(t, all, "Service", ingestName)
	var smSpec struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			JobLabel  string `yaml:"jobLabel"`
			Endpoints []struct {
				Port string `yaml:"port"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	sm.doc.decode(t, &smSpec)
	var svcSpec struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
	}
	svc.doc.decode(t, &svcSpec)
	if !subset(smSpec.Spec.Selector.MatchLabels, svcSpec.Metadata.Labels) || smSpec.Spec.JobLabel != "" ||
		len(smSpec.Spec.Endpoints) != 1 || smSpec.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("ServiceMonitor %+v: want it to select the Service %s (whose name becomes the job) on port metrics", smSpec.Spec, ingestName)
	}
	pm := only(t, all, "PodMonitor", "geoshard-reshard")
	var pmSpec struct {
		Spec struct {
			JobLabel string `yaml:"jobLabel"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	pm.doc.decode(t, &pmSpec)
	var j job
	only(t, all, "Job", "geoshard-reshard").doc.decode(t, &j)
	labels := j.Spec.Template.Metadata.Labels
	if pmSpec.Spec.JobLabel != "app.kubernetes.io/name" || labels["app.kubernetes.io/name"] != "geoshard-reshard" || !subset(pmSpec.Spec.Selector.MatchLabels, labels) {
		t.Errorf("PodMonitor %+v: want it to select the reshard Job's pods, job label from app.kubernetes.io/name (%v)", pmSpec.Spec, labels)
	}
	if args := j.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--metrics-addr") {
		t.Errorf("reshard Job args %v: want --metrics-addr, for the PodMonitor", args)
	}
	m := readKustomization(t, k8sDir+"/monitoring/kustomization.yaml")
	if !slices.Contains(m.Resources, "servicemonitor.yaml") || !slices.Contains(m.Resources, "podmonitor.yaml") {
		t.Errorf("monitoring/kustomization.yaml resources %v", m.Resources)
	}
}
