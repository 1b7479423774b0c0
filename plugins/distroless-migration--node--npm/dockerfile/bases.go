package dockerfile

import "strings"

// ImageRepo returns ref without its digest, its tag and Docker Hub's
// implicit registry and library/ prefix: "docker.io/library/nginx:1.27"
// gives "nginx".
func ImageRepo(ref string) string {
	repo, _ := splitTag(ref)
	repo = strings.TrimPrefix(strings.TrimPrefix(repo, "docker.io/"), "index.docker.io/")
	return strings.TrimPrefix(repo, "library/")
}

// ImageTag returns ref's tag, lower-cased: latest when it names none.
func ImageTag(ref string) string {
	_, tag := splitTag(ref)
	if tag == "" {
		return "latest"
	}
	return tag
}

// splitTag splits a lower-cased ref, its digest dropped, at its tag.
func splitTag(ref string) (repo, tag string) {
	repo = strings.ToLower(ref)
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag
}

// IsNodeBase reports whether ref is a known Node image: the official node
// images, distroless nodejs, Chainguard's and Docker Hardened Images'
// node, or any image whose name says node (bitnami/node,
// ubi9/nodejs-20).
func IsNodeBase(ref string) bool {
	if ClassifyBase(ref) != BaseOther {
		return true
	}
	repo := ImageRepo(ref)
	for _, p := range []string{"cgr.dev/chainguard/node", "dhi.io/node", "gcr.io/distroless/nodejs"} {
		if strings.HasPrefix(repo, p) {
			return true
		}
	}
	last := repo[strings.LastIndex(repo, "/")+1:]
	return last == "node" || strings.HasPrefix(last, "node-") || strings.Contains(last, "nodejs")
}

// Families of well-known images that ship no Node.
var (
	// nonNodeImages run their own program (a web server, a database, a
	// language runtime other than Node), by Docker Hub official name.
	nonNodeImages = map[string]bool{
		"nginx": true, "httpd": true, "caddy": true, "haproxy": true, "traefik": true,
		"postgres": true, "mysql": true, "mariadb": true, "redis": true, "mongo": true, "memcached": true,
		"python": true, "golang": true, "rust": true, "openjdk": true, "eclipse-temurin": true,
		"amazoncorretto": true, "ruby": true, "php": true, "perl": true,
	}
	// nonNodeVariants are vendors' images of those programs, by their last
	// path segment (nginxinc/nginx-unprivileged runs nginx as a user). A
	// name that only begins with one (mongo-express, redis-commander) may
	// be a Node app, so it is not among them.
	nonNodeVariants = map[string]bool{"nginx-unprivileged": true, "openresty": true}
	// nonNodePrefixes are registries' images that ship no Node, by prefix.
	nonNodePrefixes = []string{
		"gcr.io/distroless/static", "gcr.io/distroless/base", "gcr.io/distroless/cc",
		"gcr.io/distroless/java", "gcr.io/distroless/python",
		"cgr.dev/chainguard/static", "cgr.dev/chainguard/nginx", "cgr.dev/chainguard/python",
		"cgr.dev/chainguard/go", "cgr.dev/chainguard/jre", "mcr.microsoft.com/dotnet/",
	}
	// osImages are general distributions: what runs is what the start
	// command names.
	osImages = map[string]bool{
		"alpine": true, "debian": true, "ubuntu": true, "busybox": true, "fedora": true,
		"centos": true, "rockylinux": true, "almalinux": true, "amazonlinux": true,
	}
)

// NonNodeBase tells whether ref is a well-known image that ships no Node
// (nginx, postgres, python, golang, distroless static, scratch), and
// whether it is a general distribution (alpine, debian, ubuntu), which
// runs whatever its start command names and may have Node installed on
// it. ok is false for a Node image and for an image it does not know.
func NonNodeBase(ref string) (osBase, ok bool) {
	if ref == "" || IsNodeBase(ref) {
		return false, false
	}
	repo := ImageRepo(ref)
	last := repo[strings.LastIndex(repo, "/")+1:]
	switch {
	case repo == "scratch" || nonNodeImages[repo] || nonNodeImages[last] || nonNodeVariants[last]:
		// Another registry's or vendor's build of one of them too:
		// bitnami/nginx, nginxinc/nginx-unprivileged.
		return false, true
	case osImages[repo]:
		return true, true
	}
	for _, p := range nonNodePrefixes {
		if strings.HasPrefix(repo, p) {
			return false, true
		}
	}
	return false, false
}

// NoBaseEntrypoint reports whether ref is the official image of a general
// distribution (alpine, debian, ubuntu, …). Those images set no
// ENTRYPOINT, only a shell as CMD (docker-library's Dockerfiles for
// them), so the CMD a Dockerfile gives one is the whole start command.
func NoBaseEntrypoint(ref string) bool {
	return ref != "" && osImages[ImageRepo(ref)]
}
