# Varnish in front of Quire's read API, purged by tag (docs/delivery.md#cdn).
# Quire's settings for it:
#   [cdn]
#   purge_url = "http://127.0.0.1:6081/"     # this Varnish
#   purge_method = "PURGE"
#   purge_header = "Surrogate-Key"
#   [api.cache_control]
#   content = "public, s-maxage=300"         # what Varnish may keep, and how long
#   pages = "public, s-maxage=300"
vcl 4.1;

backend quire {
    .host = "127.0.0.1";
    .port = "8080";
}

# who may purge: Quire's instances
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(405, "Not allowed"));
        }
        if (!req.http.Surrogate-Key) {
            return (synth(400, "No Surrogate-Key"));
        }
        # Every kept answer that names one of the tags (space-separated;
        # a tag holds letters, digits and _ . : @ - only, so only the dot
        # needs escaping in the expression).
        ban("obj.http.Surrogate-Key ~ (^|\s)(" +
            regsuball(regsuball(req.http.Surrogate-Key, "\.", "\\."), " +", "|") + ")(\s|$)");
        return (synth(200, "Purged"));
    }
    # An answer to a key is the key's own: never served from the cache,
    # whichever way the key comes (Quire marks those answers private too).
    if (req.http.api-key || req.http.Authorization || req.url ~ "[?&]api_key=") {
        return (pass);
    }
}
