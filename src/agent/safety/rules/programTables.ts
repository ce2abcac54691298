import { words } from './commandTypes.ts';

// The program-name tables the command rules are built from, grouped by class.

// Programs that are never run, whatever the arguments: root, disks, power, accounts, kernel, firewall.
export const NEVER: readonly (readonly [string, string])[] = [
  ['sudo doas pkexec run0', 'runs commands as root'],
  ['sg newgrp', 'runs commands as another group'],
  ['nsenter', "enters other processes' namespaces (the host's, as root)"],
  ['su', 'switches user'],
  ['sudoedit', 'edits files as root'],
  ['runuser', 'runs commands as another user'],
  ['chroot', 'changes the root directory'],
  ['mkfs', 'formats a filesystem'],
  ['mkswap', 'formats a swap area'],
  ['fdisk sfdisk cfdisk gdisk sgdisk parted', 'edits partition tables'],
  ['wipefs', 'wipes filesystem signatures'],
  ['blkdiscard', 'discards a whole device'],
  ['shutdown poweroff', 'powers the machine off'],
  ['reboot', 'reboots the machine'],
  ['halt', 'halts the machine'],
  ['init telinit', 'changes the runlevel'],
  ['kexec', 'replaces the running kernel'],
  ['insmod modprobe', 'loads kernel modules'],
  ['rmmod', 'unloads kernel modules'],
  ['passwd chpasswd', 'changes account passwords'],
  ['useradd', 'creates accounts'],
  ['userdel', 'deletes accounts'],
  ['usermod', 'modifies accounts'],
  ['groupadd', 'creates groups'],
  ['groupdel', 'deletes groups'],
  ['visudo', 'edits sudo rights'],
  ['vipw', 'edits the password file'],
  ['mount', 'mounts filesystems'],
  ['umount', 'unmounts filesystems'],
  ['iptables ip6tables nft ufw', 'changes the firewall'],
  ['swapoff', 'disables swap'],
];

export const INTERACTIVE = words(
  'vi vim nvim view vimdiff gvim nano pico micro joe ed ex mcedit kak hx man info top htop btop',
  'atop iotop glances nmon watch tmux screen byobu mc ranger nnn lf fzf dialog whiptail telnet ftp',
  'lftp mosh irb pry ghci iex erl utop ipython bpython jshell open xdg-open crontab-e tig lazygit',
  'gdb lldb',
);

export const READERS = words('cat tac nl bat batcat head tail less more');
export const SEARCHERS = ['grep', 'egrep', 'fgrep', 'rg', 'ag', 'ack', 'zgrep'];
export const LISTERS = ['ls', 'dir', 'vdir', 'tree', 'exa', 'eza', 'lsd', 'locate', 'mlocate', 'plocate'];
export const SHELLS = words('sh bash zsh dash ksh mksh ash fish csh tcsh rbash yash oksh posh');
export const INTERPRETERS = words(
  'python node ruby perl php lua luajit Rscript osascript pwsh powershell julia tclsh',
  'expect guile racket sbcl R octave elixir erl ghc swift scala groovy clojure bb tsx ts-node',
  'babel-node coffee',
);
export const HTTP = words('curl wget aria2c axel http https xh httpie lynx links w3m fetch');
export const CLOUD = words(
  'gh hub glab aws gcloud gsutil az kubectl helm terraform tofu pulumi vercel netlify heroku fly',
  'flyctl firebase wrangler doctl twine ansible ansible-playbook sam cdk serverless eksctl',
);
export const SYSTEM_PMS = words(
  'apt apt-get aptitude yum dnf apk brew pacman zypper snap flatpak port nix-env choco winget dpkg',
  'rpm emerge',
);
export const LANG_PMS = words(
  'npm yarn pnpm bun pip pipx uv poetry pdm gem bundle cargo go composer conda mamba deno dotnet',
);
