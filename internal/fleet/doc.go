// Package fleet runs a portfolio on Temporal, across many hosts: one
// durable workflow per portfolio fans its services out, with bounded
// concurrency, to activities on two task queues. Static workers run
// anywhere; sandbox workers run beside a gate-control and are its clients,
// so each host still has one privileged process (ADR-0009).
//
// The unit of work is the local mode's: one portfolio.Service, keyed by its
// inputs digest, judged by portfolio.Runner.Judge. Activities are
// idempotent: a finished result is bound to its key in a content-addressed
// ResultStore that every worker shares, so a retried or repeated activity
// reuses it. Records and SARIF logs live in that store; the workflow's
// history carries their digests, and continues as new every Batch services
// so that it stays bounded.
//
// A Client is the API of a run: Dial a server, Start a portfolio, Follow it
// to its end (each service's state changes, and Notices such as a queue no
// worker polls), and Report its records; NewWorker runs a tier's
// activities. The command layer only parses flags and prints.
package fleet
