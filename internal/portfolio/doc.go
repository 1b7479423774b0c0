// Package portfolio judges many services at once: it discovers every Node
// image across repository checkouts (and shallow clones of git URLs), runs
// each through the gather pipeline in two bounded tiers (static, then
// sandbox), keeps each service's state in a durable embedded store so an
// interrupted run resumes, and writes the results as portfolio.json,
// SARIF and a self-contained HTML report.
//
// The unit of work is one Service, identified by its ID and keyed by its
// inputs digest; a Record is its serialisable state. Both are plain values
// so that another scheduler can run the same unit.
//
// It does not judge anything itself (package gather and the task's plugin
// do), nor does it rewrite Dockerfiles: with Runner.Migrate it asks the
// migrate library for a dry-run migration per ready_after_rewrite service
// and keeps its patch and gates.
package portfolio
