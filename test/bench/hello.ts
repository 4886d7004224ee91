/**
 * The floor `make bench` compares start-up and memory against: a Bun hello-world, compiled with the
 * same flags as the plugins (run.ts builds it).
 */
console.log("hello");
