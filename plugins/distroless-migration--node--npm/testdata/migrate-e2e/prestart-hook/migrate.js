// A one-off step before the server starts, as a prestart hook runs it.
console.log('migrations applied');
