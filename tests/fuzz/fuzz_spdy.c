/* tests/fuzz/fuzz_spdy.c - the e2e node agent's SPDY/3.1 reader (what the
 * kubelet API reads from the network for kubectl exec / port-forward): the
 * input is a byte stream cut into frames as a session cuts it, header
 * blocks inflated through one zlib stream, then parsed; data frames go
 * through the resize and port-forward key parsers. Nothing may crash, leak or
 * read past its input. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/e2e/agent/na.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct na_spdy_z z = { 0 };
	if (na_spdy_z_init(&z) < 0)
		return 0;
	size_t off = 0;
	while (off < size) {
		struct na_spdy_frame f;
		ssize_t n = na_spdy_parse(data + off, size - off, NA_SPDY_MAX_PAYLOAD, &f);
		if (n <= 0)
			break;
		struct na_spdy_hdrs h;
		if (f.type == NA_SPDY_SYN_STREAM || f.type == NA_SPDY_SYN_REPLY ||
		    f.type == NA_SPDY_HEADERS) {
			if (na_spdy_headers_decode(&z, f.data, f.len, &h) < 0)
				break; /* a session ends here too */
			struct na_pf_key key;
			(void)na_exec_kind(na_spdy_hdr_get(&h, "streamtype"));
			(void)na_pf_stream_key(na_spdy_hdr_get(&h, "streamtype"),
					       na_spdy_hdr_get(&h, "port"),
					       na_spdy_hdr_get(&h, "requestid"), f.stream_id, &key);
			na_spdy_hdrs_done(&h);
		} else if (f.type == NA_SPDY_DATA) {
			uint16_t w, hh;
			(void)na_exec_parse_resize((const char *)f.data, f.len, &w, &hh);
			if (na_spdy_hdrs_parse(f.data, f.len, &h) == 0)
				na_spdy_hdrs_done(&h);
		}
		off += (size_t)n;
	}
	na_spdy_z_done(&z);
	return 0;
}
