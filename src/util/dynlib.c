/* Shared libraries loaded on first use (dynlib.h). */
#include <dlfcn.h>

#include "util/dynlib.h"

int hu_dynlib_open(const char *soname, const struct hu_dynsym *syms, size_t n, hu_err *err)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return hu_err_set(err, ENOENT, "load %s: %s", soname, dlerror());
	for (size_t i = 0; i < n; i++) {
		dlerror();
		void *p = dlsym(h, syms[i].name);
		const char *e = dlerror();
		if (e || !p) {
			hu_err_set(err, ENOENT, "load %s: no symbol %s", soname, syms[i].name);
			dlclose(h);
			return -1;
		}
		*syms[i].slot = p;
	}
	return 0;
}
