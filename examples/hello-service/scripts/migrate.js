'use strict';
console.log('no migrations to run');
