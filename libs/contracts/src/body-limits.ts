/**
 * How many levels of objects and arrays a JSON body may nest. No request of the API nests more than a few;
 * what nests thousands deep is parsed by JSON.parse but overflows the stack of anything that walks it
 * recursively afterwards (JSON.stringify itself, at about 5,000 levels), a 500 for a 10 KB body.
 */
export const maxJsonBodyDepth = 32;
