package readiness

import (
	"strings"
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

func TestClassifyRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line    string
		movable bool
		why     string
	}{
		{"npm ci --omit=dev && npm cache clean --force", true, "npm"},
		{"npm config set cache /data/.npm --global", true, "npm sets its configuration"},
		{"yarn --silent cache clean", true, "yarn manages its cache"},
		{"addgroup -S app && adduser -S app -G app", true, "adds a user"},
		{"deluser --remove-home node", true, "removes a user"},
		{"mkdir -p /app/data && chown -R node:node /app", true, "sets ownership"},
		{"apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*", true, "each judged on its own"},
		{"curl -fsSL https://deb.nodesource.com/setup_22.x | bash -", true, "downloaded setup script"},
		{"set -ex && npm ci", true, "npm"},
		{"sysctl -w net.core.somaxconn=1024", false, "kernel settings"},
		{"service nginx start", false, "starts a service"},
		{"./scripts/setup.sh", false, "cannot tell what ./scripts/setup.sh leaves behind"},
		{"sh ./install.sh", false, "cannot tell what sh leaves behind"},
		{"$CMD --init", false, "comes from a variable"},
		{"if then fi (", false, "not valid POSIX shell"},
		{"echo 'vm.overcommit_memory=1' >> /etc/sysctl.d/99.conf", false, "outside the app"},
		{"ln -s /app/bin/cli /usr/local/bin/cli", false, "outside the app"},
		{"mkdir -p /app/logs && chown app /app/logs", true, "makes directories"},
		{"mkdir -p /var/lib/kutt", true, "makes directories"},
		{"npm ci && mv /usr/local/app/node_modules /node_modules", true, "moves files"},
		// coreutils install -d is mkdir with an owner and a mode.
		{`install -d -o node -g node "$THELOUNGE_HOME"`, true, "install -d makes directories (owned by node:node)"},
		{"install -dm 0750 -o app /var/lib/app", true, "(owned by app, mode 0750)"},
		{"install -m 0755 tool /usr/local/bin/tool", false, "install writes /usr/local/bin/tool, outside the app"},
		{"install -t /usr/local/app/bin tool", true, "install copies files"},
		// ln writes its link name, not its target; a later rm in the
		// same step undoes a write.
		{"ln -sf /usr/bin/python3 /usr/bin/python", false, "ln writes /usr/bin/python, outside"},
		{"ln -sf /usr/bin/python3 /usr/bin/python && npm install --omit=dev && rm -f /usr/bin/python", true, "installs or builds packages"},
		{"ln -s /usr/bin/python3 /usr/bin/python && npm ci && rm -rf /tmp/* /usr/bin/python /root/.npm", true, "removes files"},
		{"ln -s /usr/bin/python3 /usr/local/bin/python && npm ci && rm -rf /usr/local/bin/*", true, "removes files"},
		{"rm -f /usr/bin/python && ln -s /usr/bin/python3 /usr/bin/python", false, "ln writes /usr/bin/python"},
		{"ln -s /usr/bin/python3 /usr/bin/python && ln -s /usr/bin/pip3 /usr/bin/pip && rm /usr/bin/python", false, "ln writes /usr/bin/pip"},
		{"cp /usr/share/zoneinfo/UTC /usr/local/app/tz", true, "copies files"},
		{"cp -t /etc/ssl/certs ca.pem", false, "cp writes /etc/ssl/certs"},
		// A checksum check leaves nothing behind (hoppscotch's npm tarball).
		{`expected="b290" && actual=$(sha256sum npm.tgz | cut -d' ' -f1) && [ "$actual" = "$expected" ] && echo "OK" || (echo "failed" && exit 1)`, true, "checks a checksum"},
		{`echo "8e70  pnpm.tgz" | sha256sum -c - && tar -xzf pnpm.tgz`, true, "unpacks files"},
		{"sha256sum app.tgz > /etc/app.sum", false, "writes /etc/app.sum"},
		// The commands inside if and $(…) are the step's commands too.
		{"if [ -f /app/x ]; then service nginx start; fi", false, "starts a service"},
		{"V=$(./scripts/setup.sh) && echo $V", false, "cannot tell what ./scripts/setup.sh leaves behind"},
		// apk's names for the libraries alpine's nodejs links as shared
		// ones, which an addon build against it needs.
		{"apk add --no-cache python3 make g++ zlib-dev brotli-dev c-ares-dev nghttp2-dev openssl-dev icu-dev ada-dev simdjson-dev simdutf-dev sqlite-dev zstd-dev", true, "installs OS packages"},
		{"apk add --no-cache libfoo-dev", false, "apk adds libfoo-dev"},
	}
	for _, tt := range tests {
		got := ClassifyRun(dockerfile.Instruction{Command: "run", Form: dockerfile.FormShell, Args: []string{tt.line}}, "/usr/local/app")
		if got.Movable != tt.movable || !strings.Contains(got.Why, tt.why) {
			t.Errorf("ClassifyRun(%q) = %+v, want movable=%v with %q", tt.line, got, tt.movable, tt.why)
		}
	}
}

func TestDistrolessCmd(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want []string }{
		{[]string{"node", "--require", "./otel.js", "index.js"}, []string{"--require=./otel.js", "index.js"}},
		{[]string{"node", "--import", "tsx", "--max-old-space-size=512", "dist/server.js"}, []string{"--import=tsx", "--max-old-space-size=512", "dist/server.js"}},
		{[]string{"/usr/local/bin/node", "app.js"}, []string{"app.js"}},
		{[]string{"server.js"}, []string{"server.js"}},
	}
	for _, tt := range tests {
		if got := DistrolessCmd(tt.in); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("DistrolessCmd(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
