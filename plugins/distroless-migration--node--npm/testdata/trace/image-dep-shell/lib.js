exports.shelly = function shelly() {
  return require('shelly');
};
