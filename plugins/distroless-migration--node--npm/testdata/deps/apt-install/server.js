const fs = require("fs");
const http = require("http");

// Written at build time by jq, which the build installed with apt-get.
const info = fs.readFileSync(__dirname + "/build-info.txt", "utf8").trim();

const port = Number(process.env.PORT || 3000);
http
  .createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(info + "\n");
  })
  .listen(port, () => console.log(`listening on ${port}: ${info}`));
