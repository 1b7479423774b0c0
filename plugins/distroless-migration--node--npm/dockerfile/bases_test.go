package dockerfile

import (
	"strings"
	"testing"
)

func TestNonNodeBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref          string
		osBase, isOK bool
	}{
		{ref: "nginx:1.27", isOK: true},
		{ref: "docker.io/library/postgres:16@sha256:abc", isOK: true},
		{ref: "python:3.12-slim", isOK: true},
		{ref: "golang:1.23", isOK: true},
		{ref: "eclipse-temurin:21-jre", isOK: true},
		{ref: "gcr.io/distroless/static-debian12", isOK: true},
		{ref: "gcr.io/distroless/base-debian12:nonroot", isOK: true},
		{ref: "scratch", isOK: true},
		{ref: "alpine:3.20", osBase: true, isOK: true},
		{ref: "ubuntu:24.04", osBase: true, isOK: true},
		{ref: "node:20-alpine"},
		{ref: "gcr.io/distroless/nodejs22-debian12"},
		{ref: "cgr.dev/chainguard/node:latest"},
		{ref: "dhi.io/node:22"},
		{ref: "bitnami/node:20"},
		{ref: "registry.access.redhat.com/ubi9/nodejs-20"},
		{ref: "someorg/some-app:2"},
		{ref: "nginxinc/nginx-unprivileged:stable-alpine@sha256:44e3", isOK: true},
		{ref: "bitnami/nginx:1.27", isOK: true},
		{ref: "mongo-express:1.0"},
		{ref: "rediscommander/redis-commander:latest"},
		{ref: ""},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Parallel()
			osBase, ok := NonNodeBase(tt.ref)
			if osBase != tt.osBase || ok != tt.isOK {
				t.Errorf("NonNodeBase(%q) = %v, %v, want %v, %v", tt.ref, osBase, ok, tt.osBase, tt.isOK)
			}
		})
	}
}

// TestStartOnADistribution: a final stage on an official distribution
// image installs Node itself, and its CMD is the whole start command: the
// image sets no ENTRYPOINT. Without a CMD (the distribution's shell), or on
// an image codegenie does not know, the start stays unknown.
func TestStartOnADistribution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, tail string
		known      bool
		argv       string
	}{
		{from: "alpine", tail: "RUN apk add nodejs\nCMD [\"node\", \"/app/server.js\"]\n", known: true, argv: "node /app/server.js"},
		{from: "docker.io/library/debian:bookworm-slim@sha256:abc", tail: "CMD node server.js\n", known: true, argv: "/bin/sh -c node server.js"},
		{from: "ubuntu:24.04", tail: "ENTRYPOINT [\"node\"]\nCMD [\"s.js\"]\n", known: true, argv: "node s.js"},
		{from: "alpine:3.20", tail: "RUN apk add nodejs\n"},
		{from: "someorg/alpine:3", tail: "CMD [\"node\", \"s.js\"]\n"},
		{from: "someorg/some-app:2", tail: "CMD [\"node\", \"s.js\"]\n"},
	}
	for _, tt := range tests {
		f, err := Parse("Dockerfile", []byte("FROM "+tt.from+"\n"+tt.tail))
		if err != nil {
			t.Fatal(err)
		}
		sc := f.Start(f.Final)
		if sc.Known != tt.known || (tt.known && strings.Join(sc.Argv, " ") != tt.argv) {
			t.Errorf("FROM %s: known %v argv %q; want %v %q", tt.from, sc.Known, sc.Argv, tt.known, tt.argv)
		}
	}
}
