/**
 * How many levels of objects and arrays a JSON body may nest. No request of the API nests more than a few;
 * what nests thousands deep is parsed by JSON.parse but overflows the stack of anything that walks it
 * recursively afterwards (JSON.stringify itself, at about 5,000 levels), a 500 for a 10 KB body.
 */
export const maxJsonBodyDepth = 32;

/**
 * The largest JSON body, in bytes, a route of the public API reads unless its definition allows more
 * (`bodyBytes`): its longest field is a text of 4,096 characters, at most 48 KiB of JSON with every one
 * escaped (an emoji outside the basic plane as two `\uXXXX`, as PHP's json_encode and Python's json.dumps
 * write it by default). The body is parsed before anything else checks it, and external send has no rate
 * limit of its own: at the 1 MB the gateway once took, a body of unknown keys cost it some 100 ms to parse
 * and hash, and a few such requests a second held a replica for every tenant.
 */
export const publicBodyBytes = 64 * 1024;

/**
 * send-template's: a hundred variables of 1,024 characters and any buttons of 2,000 can pass 600 KiB
 * escaped; it is rate limited (60 a minute a workspace), so a body that costs to parse costs its sender
 * its budget.
 */
export const templateBodyBytes = 1024 * 1024;

/** The admin API's: an integration's config may be 32 values of 8,192 characters. */
export const adminBodyBytes = 1024 * 1024;
