/* Name resolution: an unresolvable name through getaddrinfo, gethostbyname and
 * gethostbyname_r, and one name that resolves. Usage: resolve HOST */
#include "common.h"

#include <netdb.h>

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  const char* bad = argv[1];

  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = NULL;
  int r = getaddrinfo(bad, "29511", &hints, &res);
  printf("getaddrinfo(bad): ret=%d name=%s\n", r,
         r == EAI_NONAME ? "EAI_NONAME" : r == EAI_AGAIN ? "EAI_AGAIN" : gai_strerror(r));
  if (r == 0) freeaddrinfo(res);

  h_errno = 0;
  struct hostent* he = gethostbyname(bad);
  printf("gethostbyname(bad): null=%d h_errno=%d\n", he == NULL, he ? 0 : h_errno);

  struct hostent hbuf, *result = NULL;
  char buf[2048];
  int herr = 0;
  r = gethostbyname_r(bad, &hbuf, buf, sizeof buf, &result, &herr);
  printf("gethostbyname_r(bad): ret=%d result_null=%d h_errno=%d\n", r, result == NULL, herr);

  /* A numeric name that resolves: the resolver event carries the address found. */
  hints.ai_family = AF_INET;
  hints.ai_flags = AI_NUMERICHOST;
  res = NULL;
  r = getaddrinfo("127.0.0.1", "29512", &hints, &res);
  int n = 0;
  for (struct addrinfo* ai = res; ai; ai = ai->ai_next) ++n;
  printf("getaddrinfo(127.0.0.1): ret=%d naddrs=%d\n", r, n);
  if (r == 0) freeaddrinfo(res);
  return 7;
}
