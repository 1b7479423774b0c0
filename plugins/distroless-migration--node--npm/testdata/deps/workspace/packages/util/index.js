const ms = require("ms");
module.exports = { minute: () => ms(60 * 1000) };
