package childprocess

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFileWrites: the literal writes and listens of one file, and what is
// not one.
func TestFileWrites(t *testing.T) {
	t.Parallel()
	const fsReq = "const fs = require('node:fs');\nconst path = require('path');\n"
	tests := []struct {
		name    string
		src     string
		writes  []Write
		listens []Listen
	}{
		{"absolute literal", fsReq + "fs.writeFileSync('/app/config/x.json', '{}');",
			[]Write{{File: "s.js", Line: 3, Function: "writeFileSync", Arg: "'/app/config/x.json'", Path: "/app/config/x.json"}}, nil},
		{"relative literal is the working directory's", fsReq + "fs.appendFile(`logs/app.log`, 'x', cb);",
			[]Write{{File: "s.js", Line: 3, Function: "appendFile", Arg: "`logs/app.log`", Path: "logs/app.log", CwdRelative: true}}, nil},
		{"__dirname joined with literals", fsReq + "fs.mkdirSync(path.join(__dirname, '..', 'data'), { recursive: true });",
			[]Write{{File: "s.js", Line: 3, Function: "mkdirSync", Arg: "path.join(__dirname, '..', 'data')", Path: "/data", MakesDir: true, Recursive: true}}, nil},
		{"process.cwd() resolved", fsReq + "fs.mkdir(path.resolve(process.cwd(), 'cache'), cb);",
			[]Write{{File: "s.js", Line: 3, Function: "mkdir", Arg: "path.resolve(process.cwd(), 'cache')", Path: "cache", CwdRelative: true, MakesDir: true}}, nil},
		{"fs/promises, destructured", "import { writeFile } from 'fs/promises';\nawait writeFile('/srv/state', s);",
			[]Write{{File: "s.js", Line: 2, Function: "writeFile", Arg: "'/srv/state'", Path: "/srv/state"}}, nil},
		{"an environment variable's literal default", fsReq + "fs.mkdirSync(process.env.CONFIG ?? path.join(__dirname, 'config'));\nfs.writeFileSync(process.env.LOG || '/var/log/app.log', '');",
			[]Write{{File: "s.js", Line: 3, Function: "mkdirSync", Arg: "process.env.CONFIG ?? path.join(__dirname, 'config')", Path: "/app/config", MakesDir: true},
				{File: "s.js", Line: 4, Function: "writeFileSync", Arg: "process.env.LOG || '/var/log/app.log'", Path: "/var/log/app.log"}}, nil},
		{"__dirname in a template", fsReq + "fs.writeFileSync(`${__dirname}/db/x.sqlite`, '');",
			[]Write{{File: "s.js", Line: 3, Function: "writeFileSync", Arg: "`${__dirname}/db/x.sqlite`", Path: "/app/db/x.sqlite"}}, nil},
		{"a name declared once with a path, and a ternary's literal branch", fsReq + "const DATA = path.join(__dirname, 'data');\nconst CFG = process.env.CFG ? `${process.env.CFG}/c.json` : '/etc/app/c.json';\nfs.mkdirSync(DATA, { recursive: true });\nfs.writeFileSync(CFG, '');",
			[]Write{{File: "s.js", Line: 5, Function: "mkdirSync", Arg: "DATA", Path: "/app/data", MakesDir: true, Recursive: true},
				{File: "s.js", Line: 6, Function: "writeFileSync", Arg: "CFG", Path: "/etc/app/c.json"}}, nil},
		{"names that stand for each other end", fsReq + "const A = B;\nconst B = A;\nfs.writeFileSync(A, '');", nil, nil},
		{"a name declared twice is not followed", fsReq + "let out = '/a';\nfunction f() { let out = '/b'; fs.writeFileSync(out, ''); }", nil, nil},
		{"fs.promises, and text that only looks like a call", fsReq + "// fs.writeFileSync('/not/a/call', '');\nconst s = \"fs.mkdirSync('/nor/this')\";\nawait fs.promises.writeFile('/srv/out.json', s);",
			[]Write{{File: "s.js", Line: 5, Function: "writeFile", Arg: "'/srv/out.json'", Path: "/srv/out.json"}}, nil},
		{"a computed path is not claimed", fsReq + "fs.writeFileSync(process.env.OUT, 'x');\nfs.writeFileSync(`${dir}/x`, 'x');", nil, nil},
		{"no file system module: a writeFile of something else", "store.writeFileSync('/app/x', 1);", nil, nil},
		{"a literal low port, and a computed one", "require('http').createServer(h).listen(80);\napp.listen(port);",
			nil, []Listen{{File: "s.js", Line: 1, Port: 80}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := newScanner()
			defer sc.close()
			w, l, err := sc.fileWrites(t.Context(), langJS, []byte(tc.src), "s.js", "/app")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.writes, w); d != "" {
				t.Errorf("writes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.listens, l); d != "" {
				t.Errorf("listens (-want +got):\n%s", d)
			}
		})
	}
}

// TestFileWritesUnknownDir: __dirname of a file the image does not hold
// at a known place names no directory.
func TestFileWritesUnknownDir(t *testing.T) {
	t.Parallel()
	sc := newScanner()
	defer sc.close()
	w, _, err := sc.fileWrites(t.Context(), langJS, []byte("const fs = require('fs');\nfs.mkdirSync(require('path').join(__dirname, 'x'));"), "s.js", "")
	if err != nil || len(w) != 0 {
		t.Fatalf("writes %+v, %v; want none", w, err)
	}
}
