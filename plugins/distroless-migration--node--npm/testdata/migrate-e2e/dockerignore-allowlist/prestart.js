console.log('prestart: ready to serve');
