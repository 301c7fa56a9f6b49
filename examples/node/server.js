// A ten-line Node.js HTTP server, as a loopsim target (node.toml): node's own threads (V8's
// platform workers, libuv's pool) start with it and run on the seam, one at a time.
const http = require('http');
const port = Number(process.argv[2] || 8080);
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('hello\n');
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
