// Package deploy holds what runs and watches geoshard in a cluster, and
// the tests that keep those files valid and consistent with each other:
//
//	k8s/                 Kubernetes manifests for the ingest consumer
//	                     (kubectl apply -k deploy/k8s), an example of the
//	                     credentials Secret, and a Job template for reshard
//	prometheus/          alert rules (Prometheus rule file format)
//	grafana/             the ingest and reshard dashboard
//	docker-compose.yaml  a real single-node OpenSearch and Kafka for local use
//	RUNBOOK.md           one section per alert
//
// The package has no code. Its tests parse every YAML and JSON file here and
// check what ties them together: the metrics port and probe paths, the
// Secret references and the absence of real credentials, alert annotations
// and runbook anchors, the metric names every expression uses, dashboard
// panel ids and titles, and the kustomization's resource list.
//
// # Boundaries
//
// With no code, it imports nothing.
//
//	imports: none
//	never:   none
package deploy
