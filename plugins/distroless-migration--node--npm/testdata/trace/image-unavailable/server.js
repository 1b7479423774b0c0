console.log('never built');
