const express = require("express");

const app = express();
app.get("/", (req, res) => res.json({ ok: true, service: "deps-express" }));
app.get("/healthz", (req, res) => res.send("ok"));

const port = Number(process.env.PORT || 3000);
app.listen(port, () => console.log(`listening on ${port}`));
