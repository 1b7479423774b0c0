const bcrypt = require('bcrypt');
require('node:http').createServer(async (q, r) => r.end(await bcrypt.hash('x', 4))).listen(3000);
