const express = require("express");
const { minute } = require("@deps/util");

const app = express();
app.get("/", (req, res) => res.json({ minute: minute() }));
app.listen(3000, () => console.log("listening on 3000"));
