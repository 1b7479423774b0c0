module.exports = require("physical-cpu-count");
