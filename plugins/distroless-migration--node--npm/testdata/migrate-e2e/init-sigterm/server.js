// No SIGTERM handler: as pid 1 node would ignore docker stop's SIGTERM;
// as an init's child it dies of it.
const http = require('http');
const args = process.argv.slice(2).join(' ');
const server = http.createServer((req, res) => res.end('args: ' + args + '\n'));
server.listen(Number(process.env.PORT), () => {
  console.log('listening; pid ' + process.pid + '; args: ' + args);
  // What docker stop does: SIGTERM to the container's pid 1.
  if (process.env.SIGTERM_PID1 === '1') process.kill(1, 'SIGTERM');
});
