/*
 * dispatch_hw.h: dispatch_models.c's part about a PMU that implements every
 * option: the description `pfmfsd --pmu=x86` serves on an Intel PMU of
 * version 3 (PERFEVTSELs reserve only bits 63:32), which no machine this
 * runs on has. pfm_initialize() reads nothing but pmu/info, pmu/events and
 * pmu/desc, so the program copies the sim mount's (the same registers),
 * widens the PERFEVTSELs to the hardware's and runs itself again with
 * PFMFS_MOUNT there: the exact values libpfm 3.10 would have encoded, for
 * gen_ia32 and for Core. Nothing is loaded: there is no PMU behind the copy.
 */
#ifndef PFMFS_TESTS_LIBPFM_DISPATCH_HW_H
#define PFMFS_TESTS_LIBPFM_DISPATCH_HW_H

#define HW_EVTSEL_RSVD "0xffffffff00000000\n"

/* Writes text to a new file at path. */
static void create_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f, "create %s: %s", path, strerror(errno));
	CHECK(fputs(text, f) >= 0 && fclose(f) == 0, "write %s: %s", path, strerror(errno));
}

static void copy_file(const char *from, const char *to)
{
	static char text[65536];
	ssize_t n = read_text(from, text, sizeof(text));

	CHECK(n >= 0, "read %s: %s", from, strerror(errno));
	create_file(to, text);
}

/* Copies pmu/info, pmu/events and pmu/desc of the mount into dir/pmu. */
static void copy_description(const char *dir)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(to, sizeof(to), "%s/pmu", dir);
	CHECK_OK(mkdir(dir, 0700));
	CHECK_OK(mkdir(to, 0700));
	snprintf(to, sizeof(to), "%s/pmu/desc", dir);
	CHECK_OK(mkdir(to, 0700));
	copy_file(mount_file("pmu/info"), strcat(strcpy(from, dir), "/pmu/info"));
	copy_file(mount_file("pmu/events"), strcat(strcpy(from, dir), "/pmu/events"));
	copy_file(mount_file("pmu/desc/model"), strcat(strcpy(from, dir), "/pmu/desc/model"));
	d = opendir(mount_file("pmu/desc"));
	CHECK(d, "opendir pmu/desc: %s", strerror(errno));
	while ((de = readdir(d))) {
		static const char *const files[] = { "addr", "dfl_val", "name", "pmds", "rsvd_msk", "width" };
		char rel[PATH_MAX];

		if (strncmp(de->d_name, "pmc", 3) != 0 && strncmp(de->d_name, "pmd", 3) != 0)
			continue;
		snprintf(to, sizeof(to), "%s/pmu/desc/%s", dir, de->d_name);
		CHECK_OK(mkdir(to, 0700));
		for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(rel, sizeof(rel), "pmu/desc/%s/%s", de->d_name, files[i]);
			if (access(mount_file(rel), F_OK) != 0)
				continue;
			snprintf(to, sizeof(to), "%s/pmu/desc/%s/%s", dir, de->d_name, files[i]);
			copy_file(mount_file(rel), to);
		}
		/* PERFEVTSEL0-3: the hardware's reserved bits */
		if (strncmp(de->d_name, "pmc", 3) == 0 && atoi(de->d_name + 3) < 16) {
			snprintf(to, sizeof(to), "%s/pmu/desc/%s/rsvd_msk", dir, de->d_name);
			create_file(to, HW_EVTSEL_RSVD);
		}
	}
	closedir(d);
}

/* In the re-run: the values with every option. */
static void check_hardware_values(void)
{
	const uint64_t base = LLC_MISSES_CODE | SIM_PMC_USR | PMC_INT | PMC_EN;
	const uint64_t inst = 0xc0 | SIM_PMC_USR | PMC_INT | PMC_EN;
	const uint64_t all = PMC_CMASK(255) | PMC_INV | PMC_EDGE;

	CHECK_PFM(pfm_initialize());
	/* A counter mask, invert and edge take a general counter, even for an
	 * event a fixed counter counts: the fixed ones have no filters. */
	CHECK_PFM(dispatch_with(2, 0, 0));
	CHECK_EQ_U64(outp.pfp_pmds[0].reg_num, 0);
	CHECK_EQ_U64(outp.pfp_pmds[1].reg_num, 1);
	CHECK_EQ_U64(outp.pfp_pmc_count, 2);
	CHECK_EQ_U64(pmc(0), base | PMC_CMASK(2));
	CHECK_EQ_U64(pmc(1), inst | PMC_CMASK(2));
	CHECK_PFM(dispatch_with(255, PFM_GEN_IA32_SEL_INV | PFM_GEN_IA32_SEL_EDGE, 0));
	CHECK_EQ_U64(pmc(0), base | all);
	CHECK_EQ_U64(pmc(1), inst | all);
	CHECK_PFM(dispatch_with(1, PFM_GEN_IA32_SEL_INV | PFM_GEN_IA32_SEL_ANYTHR, 0));
	CHECK_EQ_U64(pmc(0), base | PMC_CMASK(1) | PMC_INV | PMC_ANY);
	/* AnyThread alone keeps the fixed counter. */
	CHECK_PFM(dispatch_with(0, PFM_GEN_IA32_SEL_ANYTHR, 0));
	CHECK_EQ_U64(outp.pfp_pmds[1].reg_num, 16);
	CHECK_EQ_U64(pmc(16), FIXED_USR(0) | FIXED_ANY(0) | FIXED_PMI(0));
	/* Options on one event leave the others as they were. */
	events((const char *const[]){ "LLC_MISSES", "INSTRUCTION_RETIRED" }, 2);
	gen.pfp_gen_ia32_counters[0].flags = PFM_GEN_IA32_SEL_EDGE;
	CHECK_PFM(pfm_dispatch_events(&inp, &gen, &outp, NULL));
	CHECK_EQ_U64(pmc(0), base | PMC_EDGE);
	CHECK_EQ_U64(outp.pfp_pmds[1].reg_num, 16);
	CHECK_EQ_U64(pmc(16), FIXED_USR(0) | FIXED_PMI(0));
	/* The counter mask is 8 bits whatever the PMU. */
	CHECK_EQ_U64(dispatch_with(256, 0, 0), PFMLIB_ERR_INVAL);

	/* Core: the same fields from pfmlib_core_input_param_t. */
	CHECK_PFM(pfm_force_pmu(PFMLIB_CORE_PMU));
	CHECK_PFM(dispatch_with(3, PFM_CORE_SEL_EDGE, 1));
	CHECK_EQ_U64(pmc(0), base | PMC_CMASK(3) | PMC_EDGE);
	CHECK_EQ_U64(pmc(1), inst | PMC_CMASK(3) | PMC_EDGE);
	CHECK_PFM(dispatch_with(0, PFM_CORE_SEL_INV, 1));
	CHECK_EQ_U64(pmc(0), base | PMC_INV);
	CHECK_EQ_U64(dispatch_with(0, PFM_GEN_IA32_SEL_ANYTHR, 1), PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(dispatch_with(256, 0, 1), PFMLIB_ERR_INVAL);
}

static void check_hardware_description(void)
{
	char dir[PATH_MAX];
	int status;
	pid_t pid;

	CHECK(getcwd(dir, sizeof(dir) - 4), "getcwd: %s", strerror(errno));
	strcat(dir, "/hw");
	copy_description(dir);
	fflush(NULL);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		setenv("PFMFS_MOUNT", dir, 1);
		execl("/proc/self/exe", "dispatch_models", "hw", (char *)NULL);
		_exit(127);
	}
	CHECK_OK(waitpid(pid, &status, 0));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the hardware description's run failed (0x%x)",
	      status);
}

#endif
