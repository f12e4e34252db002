// pfmfs-test: backends=sim,perf
/*
 * sysfs_dirs.c: perfmon2's /sys/kernel/perfmon directories listed by a
 * program linked with the library. Each directory's exact listing ("." and
 * "..", then its entries, each with d_type and the d_ino stat gives), the
 * registers' against the mount's pmu/desc; pfmon 3.4's use (opendir of
 * formats, readdir until "default", then the files in it; version,
 * smpl_buffer_mem_cur and smpl_buffer_mem_max read as it reads them);
 * readdir_r, rewinddir, telldir/seekdir, dirfd, scandir, a walk of the
 * whole tree, ENOENT and ENOTDIR; that other directories still list
 * through libc (compared with getdents64 itself); streams by the hundred
 * and threads at once.
 */
#include "check.h"

#include <sys/stat.h>

#define SYSFS "/sys/kernel/perfmon"
#define MAX_ENTRIES 160

struct entry {
	char name[64];
	unsigned char type;
	uint64_t ino;
	long pos;	/* telldir after it */
};

/* Every entry of a stream from where it is, with readdir; errno is kept at
 * the end, as libc keeps it. */
static int read_all(DIR *d, struct entry *out)
{
	struct dirent *e;
	int n = 0;

	errno = EDOM;
	while ((e = readdir(d)) != NULL) {
		CHECK(n < MAX_ENTRIES, "too many entries");
		CHECK(strlen(e->d_name) < sizeof(out[n].name), "name %s", e->d_name);
		memset(&out[n], 0, sizeof(out[n]));	/* compared whole */
		strcpy(out[n].name, e->d_name);
		out[n].type = e->d_type;
		out[n].ino = e->d_ino;
		out[n].pos = telldir(d);
		CHECK(e->d_ino != 0 && e->d_reclen >= offsetof(struct dirent, d_name) + strlen(e->d_name) + 1,
		      "%s: d_ino %llu d_reclen %u", e->d_name, (unsigned long long)e->d_ino, e->d_reclen);
		n++;
	}
	CHECK(errno == EDOM, "errno %d (%s) at the end", errno, strerror(errno));
	return n;
}

/* "./ ../ version formats/ ...": names in order, '/' after directories. */
static const char *describe(const struct entry *e, int n, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s", i ? " " : "", e[i].name,
					e[i].type == DT_DIR ? "/" : e[i].type == DT_REG ? "" : "?");
	return buf;
}

/* SYSFS/rel lists exactly want; every entry's d_type and d_ino are what
 * stat says of it; the stream has no descriptor. Returns the count. */
static int expect_listing(const char *rel, const char *want, struct entry *got)
{
	char path[PATH_MAX], sub[PATH_MAX + 80], text[4096];
	struct stat st;
	DIR *d;
	int n, i;

	snprintf(path, sizeof(path), SYSFS "%s%s", *rel ? "/" : "", rel);
	errno = EDOM;
	d = opendir(path);
	CHECK(d != NULL, "opendir %s: %s", path, strerror(errno));
	CHECK(errno == EDOM, "errno %d after a successful opendir", errno);
	CHECK(dirfd(d) == -1 && errno == ENOTSUP, "dirfd %s: %s", path, strerror(errno));
	n = read_all(d, got);
	CHECK(readdir(d) == NULL, "readdir past the end");
	CHECK_OK(closedir(d));
	CHECK(strcmp(describe(got, n, text, sizeof(text)), want) == 0, "%s lists\n  %s\nexpected\n  %s", path,
	      text, want);
	for (i = 0; i < n; i++) {
		if (strcmp(got[i].name, "..") == 0 && (!*rel || strcmp(rel, "/") == 0)) {
			/* The root's parent: /sys/kernel, as the machine has it. */
			if (stat("/sys/kernel", &st) != 0)
				CHECK_OK(stat(SYSFS, &st));
		} else {
			snprintf(sub, sizeof(sub), "%s/%s", path, got[i].name);
			CHECK_OK(stat(sub, &st));
			CHECK((got[i].type == DT_DIR) == !!S_ISDIR(st.st_mode), "%s: d_type %u, mode 0%o", sub,
			      got[i].type, st.st_mode);
		}
		CHECK_EQ_U64(got[i].ino, st.st_ino);
	}
	return n;
}

static uint64_t mask_of(const char *key)
{
	char info[1024];

	CHECK(read_text(mount_file("pmu/info"), info, sizeof(info)) > 0, "pmu/info: %s", strerror(errno));
	return kv_u64(info, key);
}

/* The registers' names (pmc0/ pmc1/ ...) by number, from a mask. */
static size_t register_names(const char *kind, uint64_t mask, char *buf, size_t size)
{
	size_t len = 0;
	unsigned int n;

	for (n = 0; n < 64; n++)
		if (mask >> n & 1)
			len += (size_t)snprintf(buf + len, size - len, " %s%u/", kind, n);
	return len;
}

static void check_listings(void)
{
	struct entry got[MAX_ENTRIES], mount[MAX_ENTRIES];
	char want[4096], rel[128];
	uint64_t pmcs = mask_of("pmcs"), pmds = mask_of("pmds");
	int n, m, i, j, found;
	size_t len;
	DIR *d;

	expect_listing("", "./ ../ version syscall task_sessions_count sys_sessions_count smpl_buffer_mem_cur "
		       "smpl_buffer_mem_max formats/ pmu_desc/", got);
	expect_listing("/", "./ ../ version syscall task_sessions_count sys_sessions_count smpl_buffer_mem_cur "
		       "smpl_buffer_mem_max formats/ pmu_desc/", got);
	expect_listing("formats", "./ ../ default/", got);
	expect_listing("formats/default", "./ ../ version", got);
	expect_listing("pmu_desc/../formats/./default/", "./ ../ version", got);

	len = (size_t)snprintf(want, sizeof(want), "./ ../ model");
	len += register_names("pmc", pmcs, want + len, sizeof(want) - len);
	register_names("pmd", pmds, want + len, sizeof(want) - len);
	n = expect_listing("pmu_desc", want, got);
	CHECK_EQ_U64(n, 3 + __builtin_popcountll(pmcs) + __builtin_popcountll(pmds));

	/* The same registers as the mount's pmu/desc, read through libc. */
	d = opendir(mount_file("pmu/desc"));
	CHECK(d != NULL, "opendir pmu/desc: %s", strerror(errno));
	m = read_all(d, mount);
	closedir(d);
	CHECK_EQ_U64(m, n);
	for (i = 0; i < m; i++) {
		for (found = 0, j = 0; j < n; j++)
			found += strcmp(mount[i].name, got[j].name) == 0 && mount[i].type == got[j].type;
		CHECK(found == 1, "pmu/desc/%s (type %u) not in pmu_desc", mount[i].name, mount[i].type);
	}
	for (i = 3; i < n; i++) {
		snprintf(rel, sizeof(rel), "pmu_desc/%s", got[i].name);
		expect_listing(rel, "./ ../ name dfl_val rsvd_msk width addr", mount);
	}
	printf("listings: %d entries in pmu_desc\n", n);
}

/* Every directory and file of the tree, from the root down, as a walk
 * (find, ls -R) goes: each file opens and reads, each directory lists. */
static int walk(const char *path, int depth)
{
	char sub[PATH_MAX], text[256];
	struct dirent *e;
	int count = 0;
	DIR *d = opendir(path);

	CHECK(d != NULL && depth < 4, "opendir %s: %s", path, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		count++;
		if (e->d_type == DT_DIR)
			count += walk(sub, depth + 1);
		else
			CHECK(read_text(sub, text, sizeof(text)) > 0 && strchr(text, '\n'), "read %s: %s", sub,
			      strerror(errno));
	}
	CHECK_OK(closedir(d));
	return count;
}

/* pfmon 3.4: pfmon_check_smpl_module() looks for its format's directory,
 * then the files in it are read; pfmon_get_version() getline()s version,
 * pfmon_get_perfmon_smpl_mem() reads the buffers' memory and its limit. */
static void check_pfmon(void)
{
	char number[32], path[PATH_MAX];
	struct dirent *de;
	size_t len = 0, used, max;
	char *line = NULL;
	int ret = -1, files = 0, fd;
	DIR *dir;
	FILE *fp;

	dir = opendir(SYSFS "/formats");
	CHECK(dir != NULL, "unable to open " SYSFS "/formats: %s", strerror(errno));
	while (ret == -1 && (de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (!strcmp(de->d_name, "default"))
			ret = 0;
	}
	closedir(dir);
	CHECK(ret == 0, "cannot find requested kernel sampling format : default");

	dir = opendir(SYSFS "/formats/default");
	CHECK(dir != NULL, "opendir formats/default: %s", strerror(errno));
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), SYSFS "/formats/default/%s", de->d_name);
		CHECK(read_text(path, number, sizeof(number)) > 0, "read %s: %s", path, strerror(errno));
		CHECK(strcmp(de->d_name, "version") == 0 && strcmp(number, "1.0\n") == 0, "%s: %s", path, number);
		files++;
	}
	closedir(dir);
	CHECK_EQ_U64(files, 1);

	fp = fopen(SYSFS "/version", "r");
	CHECK(fp != NULL && getline(&line, &len, fp) > 0 && strcmp(line, "2.82\n") == 0, "version");
	free(line);
	fclose(fp);

	fd = (int)CHECK_OK(open(SYSFS "/smpl_buffer_mem_cur", O_RDONLY));
	memset(number, 0, sizeof(number));
	CHECK(read(fd, number, sizeof(number)) > 0, "read smpl_buffer_mem_cur");
	close(fd);
	used = strtoul(number, NULL, 0);
	fd = (int)CHECK_OK(open(SYSFS "/smpl_buffer_mem_max", O_RDONLY));
	memset(number, 0, sizeof(number));
	CHECK(read(fd, number, sizeof(number)) > 0, "read smpl_buffer_mem_max");
	close(fd);
	max = strtoul(number, NULL, 0);
	CHECK(used == 0 && max == (size_t)-1 && strcmp(number, "18446744073709551615\n") == 0,
	      "smpl_buffer_mem_cur %zu, smpl_buffer_mem_max \"%s\"", used, number);
	printf("pfmon: format default found, version 2.82, no sampling memory limit\n");
}

/* readdir_r is deprecated in glibc's headers; perfmon2-era programs call it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static int only_pmcs(const struct dirent *e)
{
	return strncmp(e->d_name, "pmc", 3) == 0;
}

/* The other ways through a stream: readdir_r, readdir64, rewinddir,
 * telldir/seekdir, scandir. */
static void check_stream_calls(void)
{
	struct entry all[MAX_ENTRIES], again[MAX_ENTRIES];
	struct dirent64 *e64;
	struct dirent ent, *res;
	struct dirent **list;
	int n, i, k;
	DIR *d;

	d = opendir(SYSFS);
	CHECK(d != NULL, "opendir: %s", strerror(errno));
	CHECK_EQ_U64(telldir(d), 0);
	n = read_all(d, all);
	rewinddir(d);
	CHECK_EQ_U64(read_all(d, again), n);
	CHECK(memcmp(all, again, sizeof(all[0]) * (size_t)n) == 0, "after rewinddir");
	for (k = n - 1; k >= 0; k--) {	/* each position, backwards */
		seekdir(d, k ? all[k - 1].pos : 0);
		CHECK_EQ_U64(read_all(d, again), n - k);
		CHECK(strcmp(again[0].name, all[k].name) == 0, "seekdir to %d: %s", k, again[0].name);
	}
	rewinddir(d);
	for (i = 0; i < n; i++) {
		CHECK(readdir_r(d, &ent, &res) == 0 && res == &ent, "readdir_r %d", i);
		CHECK(strcmp(ent.d_name, all[i].name) == 0 && ent.d_type == all[i].type && ent.d_ino == all[i].ino,
		      "readdir_r %d: %s", i, ent.d_name);
	}
	CHECK(readdir_r(d, &ent, &res) == 0 && res == NULL, "readdir_r at the end");
	rewinddir(d);
	e64 = readdir64(d);
	CHECK(e64 != NULL && strcmp(e64->d_name, ".") == 0 && e64->d_type == DT_DIR, "readdir64");
	CHECK_OK(closedir(d));

	n = scandir(SYSFS "/pmu_desc", &list, only_pmcs, alphasort);
	CHECK_EQ_U64(n, __builtin_popcountll(mask_of("pmcs")));
	for (i = 0; i < n; i++) {
		CHECK(i == 0 || strcmp(list[i - 1]->d_name, list[i]->d_name) < 0, "scandir: not sorted");
		CHECK(list[i]->d_type == DT_DIR, "scandir %s: d_type", list[i]->d_name);
	}
	while (n > 0)
		free(list[--n]);
	free(list);
	n = scandir(SYSFS "/formats/default", &list, NULL, NULL);
	CHECK(n == 3 && strcmp(list[2]->d_name, "version") == 0, "scandir formats/default: %d", n);
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	CHECK(scandir(SYSFS "/nonexistent", &list, NULL, NULL) == -1 && errno == ENOENT, "scandir nonexistent");
	CHECK(scandir(SYSFS "/version", &list, NULL, NULL) == -1 && errno == ENOTDIR, "scandir version");
}

static void check_errors(void)
{
	static const char *const enoent[] = { SYSFS "/nonexistent", SYSFS "/formats/pebs", SYSFS "/pmu_desc/pmc99",
					      SYSFS "/pmu_desc/pmc00", SYSFS "/formats/default/uuid" };
	static const char *const enotdir[] = { SYSFS "/version", SYSFS "/version/", SYSFS "/formats/default/version",
					       SYSFS "/pmu_desc/pmc0/name", SYSFS "/syscall/x",
					       SYSFS "/smpl_buffer_mem_max" };
	unsigned int i;

	for (i = 0; i < sizeof(enoent) / sizeof(enoent[0]); i++)
		CHECK(opendir(enoent[i]) == NULL && errno == ENOENT, "opendir %s: %s", enoent[i], strerror(errno));
	for (i = 0; i < sizeof(enotdir) / sizeof(enotdir[0]); i++)
		CHECK(opendir(enotdir[i]) == NULL && errno == ENOTDIR, "opendir %s: %s", enotdir[i],
		      strerror(errno));
	/* No descriptor stands for one of the tree's directories. */
	CHECK_ERRNO(open(SYSFS "/formats", O_RDONLY | O_DIRECTORY), EOPNOTSUPP);
}

/* Every other directory: libc's stream, as without the library. */
static void check_other_dirs(void)
{
	struct entry got[MAX_ENTRIES], again[MAX_ENTRIES];
	char buf[8192], text[4096], raw[4096];
	struct dirent **list;
	struct stat st;
	long n, off;
	int fd, i, count, status = 0;
	size_t len = 0;
	DIR *d;

	CHECK_OK(mkdir("sub", 0755));
	for (i = 0; i < 3; i++) {
		snprintf(text, sizeof(text), "file%d", i);
		CHECK_OK(close((int)CHECK_OK(open(text, O_WRONLY | O_CREAT, 0644))));
	}
	d = opendir(".");
	CHECK(d != NULL, "opendir .: %s", strerror(errno));
	fd = dirfd(d);
	CHECK(fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode), "dirfd .: %s", strerror(errno));
	count = read_all(d, got);
	describe(got, count, text, sizeof(text));
	rewinddir(d);
	CHECK(read_all(d, again) == count && memcmp(got, again, sizeof(got[0]) * (size_t)count) == 0, "rewinddir .");
	CHECK_OK(closedir(d));

	/* What the kernel lists, in its order. */
	fd = (int)CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);

			len += (size_t)snprintf(raw + len, sizeof(raw) - len, "%s%s%s", len ? " " : "", e->d_name,
						e->d_type == DT_DIR ? "/" : e->d_type == DT_REG ? "" : "?");
			off += e->d_reclen;
		}
	}
	CHECK(n == 0 && strcmp(text, raw) == 0, ". lists \"%s\", getdents64 \"%s\"", text, raw);
	CHECK_OK(lseek(fd, 0, SEEK_SET));
	d = fdopendir(fd);
	CHECK(d != NULL && dirfd(d) == fd, "fdopendir: %s", strerror(errno));
	CHECK(read_all(d, again) == count && memcmp(got, again, sizeof(got[0]) * (size_t)count) == 0, "fdopendir");
	CHECK_OK(closedir(d));

	n = scandir(".", &list, NULL, alphasort);
	CHECK(n == 6 && strcmp(list[0]->d_name, ".") == 0 && strcmp(list[5]->d_name, "sub") == 0, "scandir .");
	while (n > 0)
		free(list[--n]);
	free(list);
	CHECK(opendir("missing") == NULL && errno == ENOENT, "opendir missing");
	CHECK(opendir("file0") == NULL && errno == ENOTDIR, "opendir file0");
	CHECK(opendir("/sys/kernel/perfmonx") == NULL, "opendir perfmonx");

	d = opendir("/proc/self");
	CHECK(d != NULL, "opendir /proc/self: %s", strerror(errno));
	count = read_all(d, got);
	closedir(d);
	for (i = 0; i < count; i++)
		status += strcmp(got[i].name, "status") == 0 && got[i].type == DT_REG;
	CHECK(status == 1, "/proc/self has no status among %d entries", count);
}

/* Many of the library's streams at once (the registry grows past a block),
 * libc's among them, closed in another order. */
static void check_many(void)
{
	enum { N = 100 };
	DIR *ours[N], *real[N / 10];
	struct dirent *e;
	int i;

	for (i = 0; i < N; i++) {
		ours[i] = opendir(i % 2 ? SYSFS "/formats" : SYSFS "/pmu_desc/pmc0");
		CHECK(ours[i] != NULL, "opendir %d: %s", i, strerror(errno));
		if (i % 10 == 0) {
			real[i / 10] = opendir("/proc/self");
			CHECK(real[i / 10] != NULL && readdir(real[i / 10]) != NULL, "opendir /proc/self");
		}
	}
	for (i = 0; i < N; i++) {
		CHECK((e = readdir(ours[i])) != NULL && strcmp(e->d_name, ".") == 0, "stream %d", i);
		CHECK((e = readdir(ours[i])) != NULL && strcmp(e->d_name, "..") == 0, "stream %d", i);
		CHECK((e = readdir(ours[i])) != NULL && strcmp(e->d_name, i % 2 ? "default" : "name") == 0,
		      "stream %d: %s", i, e ? e->d_name : "(end)");
	}
	for (i = N - 1; i >= 0; i -= 2)
		CHECK_OK(closedir(ours[i]));
	for (i = 0; i < N / 10; i++)
		CHECK_OK(closedir(real[i]));
	for (i = 0; i < N; i += 2)
		CHECK_OK(closedir(ours[i]));
}

/* Threads listing at once, each its own streams (TSan's run checks the
 * registry and the streams). */
static void *lister(void *arg)
{
	struct entry got[MAX_ENTRIES];
	int i, n;
	DIR *d;

	(void)arg;
	for (i = 0; i < 50; i++) {
		d = opendir(i % 2 ? SYSFS : SYSFS "/pmu_desc");
		CHECK(d != NULL, "thread: opendir: %s", strerror(errno));
		n = read_all(d, got);
		CHECK(n > 3 && strcmp(got[2].name, i % 2 ? "version" : "model") == 0, "thread: %s", got[2].name);
		CHECK_OK(closedir(d));
		d = opendir("/proc/self/task");
		CHECK(d != NULL && read_all(d, got) >= 3, "thread: /proc/self/task");
		CHECK_OK(closedir(d));
	}
	return NULL;
}

int main(void)
{
	pthread_t threads[4];
	int i, count;

	check_listings();
	check_pfmon();
	check_stream_calls();
	check_errors();
	count = walk(SYSFS, 0);
	printf("walk: %d entries\n", count);
	check_other_dirs();
	check_many();
	for (i = 0; i < 4; i++)
		CHECK(pthread_create(&threads[i], NULL, lister, NULL) == 0, "pthread_create");
	for (i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	printf("sysfs_dirs: ok on %s\n", backend_name());
	return 0;
}
