package dockerfile

import "testing"

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
