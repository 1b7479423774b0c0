// physical-cpu-count runs `lscpu -p | egrep ... | wc -l` through
// child_process.execSync, that is /bin/sh, when it is required.
const cpus = require("./lib/cpus");
const http = require("http");

http.createServer((req, res) => res.end(JSON.stringify({ cpus }))).listen(3000, () => console.log("listening on 3000"));
