// express-rate-limit for `run.sh`: a fixed window of WINDOW_MS holding LIMIT requests, with the
// IETF draft-8 fields (`RateLimit-Policy`, `RateLimit`) on every response and `Retry-After` on
// a 429 (or, with FIELDS=none, only the `Retry-After`).
const express = require('express');
const { rateLimit } = require('express-rate-limit');

const windowMs = parseInt(process.env.WINDOW_MS || '1000', 10);
const limit = parseInt(process.env.LIMIT || '10', 10);
const port = parseInt(process.env.PORT || '8082', 10);

const app = express();
// FIELDS=none: no rate-limit fields, only `Retry-After` on a 429 (the seconds to the window's
// reset), as many APIs answer.
const bare = process.env.FIELDS === 'none';
app.use(rateLimit({
  windowMs,
  limit,
  standardHeaders: bare ? false : 'draft-8',
  legacyHeaders: false,
  handler: (req, res, next, options) => {
    if (bare) {
      const wait = Math.ceil((req.rateLimit.resetTime.getTime() - Date.now()) / 1000);
      res.setHeader('Retry-After', String(Math.max(wait, 1)));
    }
    res.status(options.statusCode).send(options.message);
  },
}));
app.get('/', (req, res) => res.status(200).type('text/plain').send('ok'));
app.listen(port, '127.0.0.1', () => console.log(`listening on ${port}: ${limit} per ${windowMs} ms`));
process.on('SIGTERM', () => process.exit(0));
