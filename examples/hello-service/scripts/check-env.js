'use strict';
if (process.env.PORT && !/^\d+$/.test(process.env.PORT)) {
  console.error(`PORT must be a number, got ${process.env.PORT}`);
  process.exit(1);
}
