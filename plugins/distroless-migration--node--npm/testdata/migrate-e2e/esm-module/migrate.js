// An ES module package: every .js file here is ESM, so a generated helper
// that uses require must not be a .js file.
console.log('migrations applied');
