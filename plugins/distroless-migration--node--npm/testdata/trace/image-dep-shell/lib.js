exports.shelly = function shelly() {
  return require('shelly');
};
exports.wrapped = function wrapped() {
  return require('wrapper');
};
