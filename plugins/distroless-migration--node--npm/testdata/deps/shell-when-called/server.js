// node-cmd's runSync runs its command line with child_process.execSync,
// that is /bin/sh -c, on the one request that asks for it.
const cmd = require("node-cmd");
const http = require("http");

http
  .createServer((req, res) => {
    if (req.url === "/uptime") {
      res.end(String(cmd.runSync("uptime").data));
      return;
    }
    res.end("ok\n");
  })
  .listen(3000, () => console.log("listening on 3000"));
